import AttestKit
import Foundation
public import Logging
import NIOConcurrencyHelpers
import PostgresNIO
import ServiceLifecycle

/// An ``AttestationStore`` in PostgreSQL: the engine for several replicas sharing one database.
///
/// Each operation is one statement or one transaction on a pooled connection (`postgres-nio`'s
/// `PostgresClient`); decisions are single conditional statements (`UPDATE … WHERE counter < $1 RETURNING`,
/// `INSERT … ON CONFLICT DO NOTHING RETURNING`), so under PostgreSQL's row locks two replicas racing on one
/// challenge or counter cannot both win. The schema lives in its own PostgreSQL schema (default `attestkit`)
/// and is migrated by ``prepare()`` under an advisory lock.
///
/// The store is a `Service` whose ``run()`` runs the connection pool: add it to the server's `ServiceGroup`
/// (or use ``StoreURL/withStore(logger:_:)``), then call ``prepare()``. Queries wait until ``run()`` runs.
///
/// Every operation but ``prepare()`` has a deadline, ``PostgresStoreConfiguration/operationTimeout``
/// (waiting for a connection included, and shared by a refusal's follow-up read): past it the call throws
/// ``StoreError/Code/storageUnavailable`` ("… did not answer within N s") whatever the database or the driver still
/// does, and the connection it used is closed, so that the pool never hands out a connection in an unknown state.
/// A lost, restarted, crashed or frozen database thus fails requests and `/ready` within the deadline, and service
/// resumes when it is back.
///
/// Its operations are the SQL shared with the other SQL store, written once; this type holds only its driver.
public final class PostgresAttestationStore: AttestationStore, SQLBackedStore {
    /// The configuration the store was created with (its description hides the password).
    public let configuration: PostgresStoreConfiguration
    /// The shared SQL of every operation, over this store's executor (tests reach it).
    let sql: SQLStore<PostgresExecutor>
    /// Whether ``prepare()`` applies the missing migrations or only checks the schema.
    public let migrations: MigrationPolicy
    private let logger: Logger
    private let prepared = NIOLockedValueBox<SchemaVersion?>(nil)
    /// The TLS of every connection, the `sslrootcert` file read once.
    private let tls: PostgresTLS

    /// Creates a store; no connection is opened until ``run()`` runs and a query needs one.
    /// - Parameters:
    ///   - configuration: The server, the credentials, the schema and the pool.
    ///   - migrations: Whether ``prepare()`` applies the missing migrations or only checks the schema.
    ///   - logger: Where the store logs (never a key, a receipt, a challenge or the password).
    /// - Throws: ``StoreError/Code/invalidInput`` when the configuration is malformed, or its `sslrootcert` file
    ///   cannot be read or holds no certificate.
    public init(
        configuration: PostgresStoreConfiguration, migrations: MigrationPolicy = .apply,
        logger: Logger = StoreLogging.silent
    ) throws(StoreError) {
        let configuration = try configuration.validated()
        self.configuration = configuration
        self.migrations = migrations
        self.logger = logger
        let tls = try configuration.makeTLS()
        self.tls = tls
        var client =
            if let socket = configuration.unixSocketPath {
                PostgresClient.Configuration(
                    unixSocketPath: socket, username: configuration.username, password: configuration.password,
                    database: configuration.database)
            } else {
                PostgresClient.Configuration(
                    host: configuration.host, port: configuration.port, username: configuration.username,
                    password: configuration.password, database: configuration.database, tls: tls.client)
            }
        client.options.maximumConnections = configuration.maximumConnections
        client.options.connectTimeout = configuration.connectTimeout
        let schema = PostgresSchema(name: configuration.schema)
        // The prepared statements of the request path name their table without the schema.
        client.options.additionalStartupParameters = [("search_path", schema.quoted)]
        // The driver logs every message from the server at trace, rows included (key ids, public keys, challenges,
        // receipts): it never logs below debug, whatever the service's level.
        var driverLogger = logger
        driverLogger.logLevel = max(logger.logLevel, .debug)
        self.sql = SQLStore(
            executor: PostgresExecutor(
                client: PostgresClient(configuration: client, backgroundLogger: driverLogger),
                schema: schema,
                deadline: PostgresDeadline(timeout: configuration.operationTimeout)))
    }

    /// Runs the connection pool until the service group shuts down or the task is cancelled.
    public func run() async throws {
        await executor.client.run()
        executor.closed.withLockedValue { $0 = true }
    }

    /// Creates the schema and applies the missing migrations, under an advisory lock (under
    /// ``MigrationPolicy/verify``: checks that this release can run on the schema). Needs ``run()``.
    ///
    /// Then checks that the pool's connections resolve the unqualified `keys` of the request path's prepared statements
    /// to the store's own table (a pooler that drops the `search_path` the connections start with fails here, not on
    /// the first assertion).
    ///
    /// Not bound by ``PostgresStoreConfiguration/operationTimeout``: the first connection is bounded by
    /// ``PostgresStoreConfiguration/connectTimeout``, and migrations may take longer than a query.
    public func prepare() async throws(StoreError) {
        try executor.checkOpen()
        let detail = PostgresExecutor.detail
        try await StoreError.wrapping("connecting to PostgreSQL", detail: detail) { try await checkConnection() }
        let version = try await StoreError.wrapping("migrating the PostgreSQL schema", detail: detail) {
            try await executor.schema.migrate(executor.client, policy: migrations, logger: executor.logger)
        }
        let (client, schema, queryLogger) = (executor.client, executor.schema, executor.logger)
        try await StoreError.wrapping("checking the connections' search_path", detail: detail) {
            try await client.withConnection { connection in
                try await PostgresPreparedStatements.checkSearchPath(
                    on: connection, schema: schema, logger: queryLogger)
            }
        }
        prepared.withLockedValue { $0 = version }
        logger.debug(
            "PostgreSQL store ready", metadata: ["schema": "\(configuration.schema)", "version": "\(version.current)"])
    }

    /// The schema the store found and left, once prepared.
    public var schemaVersion: SchemaVersion? {
        prepared.withLockedValue { $0 }
    }

    /// Opens one connection outside the pool and closes it, so that an unreachable server or a refused login
    /// fails ``prepare()`` at once with its reason; the pool would keep retrying for about a minute.
    private func checkConnection() async throws {
        var settings =
            if let socket = configuration.unixSocketPath {
                PostgresConnection.Configuration(
                    unixSocketPath: socket, username: configuration.username, password: configuration.password,
                    database: configuration.database)
            } else {
                PostgresConnection.Configuration(
                    host: configuration.host, port: configuration.port, username: configuration.username,
                    password: configuration.password, database: configuration.database, tls: try tls.connection())
            }
        // Bounded before the multiplication (an hour at most): a code-built configuration may hold any duration.
        let timeout = configuration.connectTimeout.components
        settings.options.connectTimeout = .milliseconds(
            max(0, min(timeout.seconds, 3_600)) * 1000 + timeout.attoseconds / 1_000_000_000_000_000)
        let connection = try await PostgresConnection.connect(
            on: PostgresClient.defaultEventLoopGroup.any(), configuration: settings, id: 0, logger: executor.logger
        ).get()
        try await connection.close()
    }

    /// Refuses further operations once the counter advances and key reads already accepted have been answered; the
    /// pool's connections close when ``run()`` returns.
    public func close() async {
        await executor.commits.close()
        await executor.reads.close()
        executor.closed.withLockedValue { $0 = true }
    }

    /// Runs one statement with no parameters on a connection of the pool, for tests that put the database in a
    /// state this release does not make (a schema a newer release migrated).
    package func execute(_ statement: String) async throws(StoreError) {
        let logger = executor.logger
        _ = try await StoreError.wrapping("running a test statement", detail: PostgresExecutor.detail) {
            try await executor.client.withConnection { connection in
                try await PostgresExecutor.run(SQLStatement(statement), on: connection, logger: logger)
            }
        }
    }

    /// Drops the store's schema and everything in it, even after ``close()``. For tests and benchmarks that
    /// use a throw-away schema.
    package func dropSchema() async throws(StoreError) {
        let logger = executor.logger
        let drop = SQLStatement("DROP SCHEMA IF EXISTS \(executor.schema.quoted) CASCADE")
        _ = try await StoreError.wrapping("dropping the schema", detail: PostgresExecutor.detail) {
            try await executor.client.withConnection { connection in
                try await PostgresExecutor.run(drop, on: connection, logger: logger)
            }
        }
    }
}
