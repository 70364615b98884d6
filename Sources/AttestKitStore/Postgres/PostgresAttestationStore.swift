public import AttestKit
public import Foundation
public import Logging
import NIOConcurrencyHelpers
import NIOSSL
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
public final class PostgresAttestationStore: AttestationStore {
    /// The configuration the store was created with (its description hides the password).
    public let configuration: PostgresStoreConfiguration
    private let client: PostgresClient
    private let schema: PostgresSchema
    private let deadline: PostgresDeadline
    private let logger: Logger
    private let queryLogger = Logger(
        label: "attestkit.store.postgres.query", factory: { _ in SwiftLogNoOpLogHandler() })
    private let closed = NIOLockedValueBox(false)

    /// Creates a store; no connection is opened until ``run()`` runs and a query needs one.
    /// - Throws: ``StoreError/Code/invalidInput`` when the configuration is malformed.
    public init(configuration: PostgresStoreConfiguration, logger: Logger = StoreLogging.silent) throws(StoreError) {
        let configuration = try configuration.validated()
        self.configuration = configuration
        self.schema = PostgresSchema(name: configuration.schema)
        self.deadline = PostgresDeadline(timeout: configuration.operationTimeout)
        self.logger = logger
        let tls: PostgresClient.Configuration.TLS
        switch configuration.tls {
        case .disable: tls = .disable
        case .require: tls = .require(.makeClientConfiguration())
        default: tls = .prefer(.makeClientConfiguration())
        }
        var client = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: tls)
        client.options.maximumConnections = configuration.maximumConnections
        client.options.connectTimeout = configuration.connectTimeout
        self.client = PostgresClient(configuration: client, backgroundLogger: logger)
    }

    /// Runs the connection pool until the service group shuts down or the task is cancelled.
    public func run() async throws {
        await client.run()
        closed.withLockedValue { $0 = true }
    }

    /// Creates the schema and applies the missing migrations, under an advisory lock. Needs ``run()``.
    ///
    /// Not bound by ``PostgresStoreConfiguration/operationTimeout``: the first connection is bounded by
    /// ``PostgresStoreConfiguration/connectTimeout``, and migrations may take longer than a query.
    public func prepare() async throws(StoreError) {
        try checkOpen()
        try await StoreError.wrapping("connecting to PostgreSQL", detail: Self.detail) { try await checkConnection() }
        try await StoreError.wrapping("migrating the PostgreSQL schema", detail: Self.detail) {
            try await schema.migrate(client, logger: queryLogger)
        }
        logger.debug("PostgreSQL store ready", metadata: ["schema": "\(configuration.schema)"])
    }

    /// Opens one connection outside the pool and closes it, so that an unreachable server or a refused login
    /// fails ``prepare()`` at once with its reason; the pool would keep retrying for about a minute.
    private func checkConnection() async throws {
        let tls: PostgresConnection.Configuration.TLS
        switch configuration.tls {
        case .disable: tls = .disable
        case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        default: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var settings = PostgresConnection.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: tls)
        let timeout = configuration.connectTimeout.components
        settings.options.connectTimeout = .milliseconds(
            timeout.seconds * 1000 + timeout.attoseconds / 1_000_000_000_000_000)
        let connection = try await PostgresConnection.connect(
            on: PostgresClient.defaultEventLoopGroup.any(), configuration: settings, id: 0, logger: queryLogger
        ).get()
        try await connection.close()
    }

    /// Refuses further operations; the pool's connections close when ``run()`` returns.
    public func close() async {
        closed.withLockedValue { $0 = true }
    }

    /// Drops the store's schema and everything in it, even after ``close()``. For tests and benchmarks that
    /// use a throw-away schema.
    package func dropSchema() async throws(StoreError) {
        let logger = queryLogger
        let drop = PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(schema.quoted) CASCADE")
        _ = try await StoreError.wrapping("dropping the schema", detail: Self.detail) {
            try await client.withConnection { connection in
                try await PostgresStatement.run(connection, drop, logger: logger)
            }
        }
    }

    /// The client's error code and the server's SQLSTATE, for ``StoreError`` reasons; never the query, its
    /// binds or the server's message, which may quote values.
    private static func detail(_ error: any Error) -> String? {
        guard let error = error as? PSQLError else { return nil }
        if let state = error.serverInfo?[.sqlState] { return "PostgreSQL \(error.code), SQLSTATE \(state)" }
        return "PostgreSQL \(error.code)"
    }

    // MARK: Challenges

    /// Stores a new challenge: one `INSERT … ON CONFLICT (id) DO NOTHING RETURNING`.
    public func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        guard challenge.consumedAt == nil else {
            throw StoreError(.invalidInput, "a new challenge cannot be consumed already")
        }
        var statement = PostgresStatement()
        statement.bytes(challenge.id.bytes)
        statement.bytes(challenge.bytes)
        statement.text(challenge.purpose.rawValue)
        statement.bytes(challenge.keyID?.bytes)
        statement.int64(try StoreTime.milliseconds(challenge.createdAt, "createdAt"))
        statement.int64(try StoreTime.milliseconds(challenge.expiresAt, "expiresAt"))
        let rows = try await query(
            "issuing a challenge",
            statement.query(
                """
                INSERT INTO \(schema.table("challenges")) (id, challenge, purpose, key_id, created_at_ms, expires_at_ms)
                VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING id
                """))
        guard !rows.isEmpty else {
            throw StoreError(.invalidInput, "the challenge identifier is already in use")
        }
    }

    /// Consumes a challenge once: one `UPDATE … WHERE consumed_at_ms IS NULL AND expires_at_ms > now RETURNING`, then
    /// a read only to name a refusal.
    public func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        let instant = try StoreTime.milliseconds(now, "now")
        let end = deadline.end()
        var statement = PostgresStatement()
        statement.int64(instant)
        statement.bytes(id.bytes)
        let rows = try await query(
            "consuming a challenge",
            statement.query(
                """
                UPDATE \(schema.table("challenges")) SET consumed_at_ms = $1
                WHERE id = $2 AND consumed_at_ms IS NULL AND expires_at_ms > $1
                RETURNING \(StoreColumns.challenge)
                """), by: end)
        guard let row = rows.first else {
            var read = PostgresStatement()
            read.bytes(id.bytes)
            let existing = try await query(
                "reading a challenge",
                read.query(
                    "SELECT \(StoreColumns.challenge) FROM \(schema.table("challenges")) WHERE id = $1"),
                by: end
            ).first
            throw StoredChallenge.refusal(
                for: try existing.map { row throws(StoreError) in try PostgresStoreRow(row).challenge() },
                now: StoreTime.date(instant))
        }
        let consumed = try PostgresStoreRow(row).challenge()
        try consumed.checkUse(purpose: purpose, keyID: keyID)
        return consumed
    }

    /// Deletes the challenges expired at `now` in one statement and returns how many.
    public func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int {
        var statement = PostgresStatement()
        statement.int64(try StoreTime.milliseconds(now, "now"))
        let rows = try await query(
            "deleting expired challenges",
            statement.query(
                """
                WITH deleted AS (DELETE FROM \(schema.table("challenges")) WHERE expires_at_ms <= $1 RETURNING 1)
                SELECT count(*) AS n FROM deleted
                """))
        return Int(try rows.first.map { row throws(StoreError) in try PostgresStoreRow(row).requiredInteger("n") } ?? 0)
    }

    // MARK: Keys

    /// Registers a key if absent: one `INSERT … ON CONFLICT (key_id) DO NOTHING RETURNING`.
    public func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        var statement = PostgresStatement()
        statement.bytes(registration.keyID.bytes)
        statement.bytes(registration.publicKeyX963)
        statement.text(registration.appID.description)
        statement.text(registration.environment.rawValue)
        statement.bytes(registration.receipt)
        statement.int64(try StoreTime.milliseconds(ifPresent: registration.receiptCreatedAt, "receiptCreatedAt"))
        statement.int64(try StoreTime.milliseconds(ifPresent: registration.receiptRefreshAt, "receiptRefreshAt"))
        statement.text(registration.osVersion)
        statement.text(registration.bundleVersion)
        statement.int64(registration.validationCategory.map { Int64($0) })
        statement.int64(try StoreTime.milliseconds(now, "now"))
        let rows = try await query(
            "registering a key",
            statement.query(
                """
                INSERT INTO \(schema.table("keys")) (key_id, public_key, app_id, environment, counter, receipt,
                    receipt_created_at_ms, receipt_refresh_at_ms, os_version, bundle_version, validation_category,
                    created_at_ms)
                VALUES ($1, $2, $3, $4, 0, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (key_id) DO NOTHING
                RETURNING \(StoreColumns.key)
                """))
        guard let row = rows.first else {
            throw StoreError(.keyExists, "a key with this identifier is already registered")
        }
        return try PostgresStoreRow(row).keyRecord()
    }

    /// The key with this identifier, or `nil`.
    public func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        try await readKey(keyID)
    }

    /// ``key(_:)`` by `end`, for the read that names a refusal.
    private func readKey(
        _ keyID: KeyID, by end: ContinuousClock.Instant? = nil
    ) async throws(StoreError) -> KeyRecord? {
        var statement = PostgresStatement()
        statement.bytes(keyID.bytes)
        let rows = try await query(
            "reading a key",
            statement.query(
                "SELECT \(StoreColumns.key) FROM \(schema.table("keys")) WHERE key_id = $1"), by: end)
        return try rows.first.map { row throws(StoreError) in try PostgresStoreRow(row).keyRecord() }
    }

    /// Advances a counter: one `UPDATE … WHERE counter < new AND revoked_at_ms IS NULL`, then a read only to name a
    /// refusal.
    public func advanceCounter(of keyID: KeyID, to counter: UInt32, now: Date) async throws(StoreError) {
        let end = deadline.end()
        var statement = PostgresStatement()
        statement.int64(Int64(counter))
        statement.int64(try StoreTime.milliseconds(now, "now"))
        statement.bytes(keyID.bytes)
        let rows = try await query(
            "advancing a counter",
            statement.query(
                """
                UPDATE \(schema.table("keys")) SET counter = $1, last_assertion_at_ms = $2
                WHERE key_id = $3 AND counter < $1 AND revoked_at_ms IS NULL
                RETURNING key_id
                """), by: end)
        guard !rows.isEmpty else {
            throw KeyRecord.counterRefusal(for: try await readKey(keyID, by: end))
        }
    }

    /// Stores a newer receipt and appends its risk metric, in one transaction.
    public func storeReceipt(
        _ update: ReceiptUpdate, for keyID: KeyID, now: Date
    ) async throws(StoreError) -> KeyRecord {
        let instant = try StoreTime.milliseconds(now, "now")
        let created = try StoreTime.milliseconds(update.receiptCreatedAt, "receiptCreatedAt")
        var statement = PostgresStatement()
        statement.bytes(update.receipt)
        statement.int64(created)
        statement.int64(try StoreTime.milliseconds(ifPresent: update.receiptRefreshAt, "receiptRefreshAt"))
        statement.int64(update.riskMetric.map { Int64($0) })
        statement.bytes(keyID.bytes)
        let updateQuery = statement.query(
            """
            UPDATE \(schema.table("keys")) SET receipt = $1, receipt_created_at_ms = $2, receipt_refresh_at_ms = $3,
                risk_metric = COALESCE($4, risk_metric)
            WHERE key_id = $5 AND revoked_at_ms IS NULL
                AND (receipt_created_at_ms IS NULL OR receipt_created_at_ms < $2)
            RETURNING \(StoreColumns.key)
            """)
        var history = PostgresStatement()
        history.bytes(keyID.bytes)
        history.int64(update.riskMetric.map { Int64($0) })
        history.int64(created)
        history.int64(instant)
        let historyQuery = history.query(
            """
            INSERT INTO \(schema.table("risk_metrics")) (key_id, risk_metric, receipt_created_at_ms, recorded_at_ms)
            VALUES ($1, $2, $3, $4)
            """)
        let hasMetric = update.riskMetric != nil
        let logger = queryLogger
        let end = deadline.end()
        let rows = try await perform("storing a receipt", by: end) { [client] lease in
            try await client.withConnection { connection in
                try await lease.use(connection) { connection in
                    try await connection.withTransaction(logger: logger) { connection in
                        let rows = try await PostgresStatement.run(connection, updateQuery, logger: logger)
                        if !rows.isEmpty, hasMetric {
                            try await PostgresStatement.run(connection, historyQuery, logger: logger)
                        }
                        return rows
                    }
                }
            }
        }
        guard let row = rows.first else {
            throw KeyRecord.receiptRefusal(for: try await readKey(keyID, by: end))
        }
        return try PostgresStoreRow(row).keyRecord()
    }

    /// Moves a key's next receipt exchange, in one statement.
    public func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError) {
        var statement = PostgresStatement()
        statement.int64(try StoreTime.milliseconds(ifPresent: refreshAt, "refreshAt"))
        statement.bytes(keyID.bytes)
        let rows = try await query(
            "postponing a receipt refresh",
            statement.query(
                "UPDATE \(schema.table("keys")) SET receipt_refresh_at_ms = $1 WHERE key_id = $2 RETURNING key_id"))
        guard !rows.isEmpty else { throw StoreError(.keyNotFound, "no key has this identifier") }
    }

    /// A key's risk metrics, newest first.
    public func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry] {
        try StoreLimits.checkLimit(limit)
        var statement = PostgresStatement()
        statement.bytes(keyID.bytes)
        statement.int64(Int64(limit))
        let rows = try await query(
            "reading a risk history",
            statement.query(
                """
                SELECT \(StoreColumns.riskMetric) FROM \(schema.table("risk_metrics"))
                WHERE key_id = $1 ORDER BY seq DESC LIMIT $2
                """))
        return try rows.map { row throws(StoreError) in try PostgresStoreRow(row).riskMetricEntry() }
    }

    /// Revokes a key in one statement; a revoked key is returned unchanged.
    public func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        let end = deadline.end()
        var statement = PostgresStatement()
        statement.int64(try StoreTime.milliseconds(now, "now"))
        statement.bytes(keyID.bytes)
        let rows = try await query(
            "revoking a key",
            statement.query(
                """
                UPDATE \(schema.table("keys")) SET revoked_at_ms = $1 WHERE key_id = $2 AND revoked_at_ms IS NULL
                RETURNING \(StoreColumns.key)
                """), by: end)
        if let row = rows.first { return try PostgresStoreRow(row).keyRecord() }
        guard let existing = try await readKey(keyID, by: end) else {
            throw StoreError(.keyNotFound, "no key has this identifier")
        }
        return existing
    }

    /// Active keys with a receipt due for exchange at `now`, earliest first.
    public func keysDueForReceiptRefresh(now: Date, limit: Int) async throws(StoreError) -> [KeyRecord] {
        var statement = PostgresStatement()
        statement.int64(try StoreTime.milliseconds(now, "now"))
        try StoreLimits.checkLimit(limit)
        statement.int64(Int64(limit))
        let rows = try await query(
            "listing keys due for a receipt refresh",
            statement.query(
                """
                SELECT \(StoreColumns.key) FROM \(schema.table("keys"))
                WHERE revoked_at_ms IS NULL AND receipt IS NOT NULL AND receipt_refresh_at_ms <= $1
                ORDER BY receipt_refresh_at_ms, key_id LIMIT $2
                """))
        return try rows.map { row throws(StoreError) in try PostgresStoreRow(row).keyRecord() }
    }

    /// Key counts by environment and state, in one `GROUP BY`.
    public func keyCounts() async throws(StoreError) -> KeyCounts {
        let rows = try await query(
            "counting keys",
            PostgresQuery(
                unsafeSQL: """
                    SELECT environment, CASE WHEN revoked_at_ms IS NULL THEN 0 ELSE 1 END::BIGINT AS revoked,
                        count(*) AS n
                    FROM \(schema.table("keys")) GROUP BY 1, 2
                    """))
        return try KeyCounts(rows: rows.map { PostgresStoreRow($0) })
    }

    // MARK: Shared budgets

    /// Takes one request from a budget: one `INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING` under the row's
    /// lock, so replicas racing on the last request cannot both get it.
    public func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int? {
        let instant = try StoreTime.milliseconds(now, "now")
        let table = schema.table("rate_budgets")
        var statement = PostgresStatement()
        statement.text(budget.name)
        statement.int64(Int64(budget.perMinute))
        statement.int64(instant)
        let taken = try await query(
            "taking from a budget", statement.query(RateBudget.takeStatement(table: table, dialect: .postgres)))
        guard taken.isEmpty else { return nil }
        var read = PostgresStatement()
        read.text(budget.name)
        let rows = try await query(
            "reading a budget", read.query(RateBudget.readStatement(table: table, dialect: .postgres)))
        let row = try rows.first.map { row throws(StoreError) in
            let stored = PostgresStoreRow(row)
            return (try stored.requiredInteger("tokens"), try stored.requiredInteger("updated_at_ms"))
        }
        return budget.wait(afterRefusal: row, now: instant)
    }

    // MARK: Running statements

    /// Runs one statement by `end` (``PostgresDeadline/end()``), or within the operation timeout.
    private func query(
        _ operation: StaticString, _ query: PostgresQuery, by end: ContinuousClock.Instant? = nil
    ) async throws(StoreError) -> [PostgresRow] {
        let logger = queryLogger
        return try await perform(operation, by: end) { [client] lease in
            try await client.withConnection { connection in
                try await lease.use(connection) { connection in
                    try await PostgresStatement.run(connection, query, logger: logger)
                }
            }
        }
    }

    private func checkOpen() throws(StoreError) {
        guard !closed.withLockedValue({ $0 }) else {
            throw StoreError(.storageUnavailable, "the store is closed")
        }
    }

    /// Runs `body` unless the store is closed, by `end` or within ``PostgresStoreConfiguration/operationTimeout``.
    private func perform<Result: Sendable>(
        _ operation: StaticString, by end: ContinuousClock.Instant? = nil,
        _ body: @escaping @Sendable (PostgresDeadline.Lease) async throws -> Result
    ) async throws(StoreError) -> Result {
        try checkOpen()
        let deadline = deadline
        return try await StoreError.wrapping(operation, detail: Self.detail) {
            try await deadline.run(operation, by: end, body)
        }
    }
}
