import Logging
import NIOCore
import NIOConcurrencyHelpers
import PostgresNIO

/// The ``SQLExecutor`` of ``PostgresAttestationStore``: statements on pooled connections of a `PostgresClient`, each
/// under its ``PostgresDeadline``, on tables qualified with the store's schema.
///
/// Every statement runs by the deadline it is given, or within the operation timeout (``PostgresDeadline``): the
/// caller is answered by then, and a connection found closed when leased is swapped before anything is sent.
///
/// Counter advances go through ``commits``: those that arrive while a batch is being sent are sent together as one
/// statement per round of distinct keys (one round trip and one commit for the batch), the batch bound by the
/// earliest deadline of its callers. Every other statement runs on its own pooled connection, concurrently: PostgreSQL
/// already groups the WAL flushes of concurrent commits, and a batch of different statements on one connection
/// would turn the pool's parallel round trips into sequential ones.
struct PostgresExecutor: SQLExecutor {
    /// The connection pool.
    let client: PostgresClient
    /// The schema holding the store's tables.
    let schema: PostgresSchema
    /// The operation timeout.
    let deadline: PostgresDeadline
    /// Whether the store was closed (or its pool stopped): then every operation fails.
    let closed = NIOLockedValueBox(false)
    /// The logger handed to the driver for queries: silent.
    let logger = Logger(label: "attestkit.store.postgres.query", factory: { _ in SwiftLogNoOpLogHandler() })
    /// The group commit of counter advances.
    let commits: GroupCommit<PostgresStoreRow>
    /// The batches of key reads: the gate's reads of keys it has not kept, which a spread of many keys makes on
    /// nearly every request, answered together by one prepared `SELECT … WHERE key_id = ANY($1)` per batch. The
    /// reads of one key in a batch (many requests naming one key, known or not) share one answer
    /// (``GroupCommit/sharedReads(of:)``), rather than one statement each in turn.
    let reads: GroupCommit<PostgresStoreRow>

    /// How many batches of counter advances (and, separately, of key reads) are sent at once: one. The writes that
    /// arrive while a batch is out wait for it and go together in the next, so the batches grow with the load and
    /// the database parses, executes and commits once per batch. Measured against four at once (each on its own
    /// pooled connection): fewer, larger batches cost less CPU per request (about 190 µs against 230 at 16
    /// concurrent keys, machine-wide) and answered more requests a second at 16 and 64 keys, as the two cores, not
    /// the round trips, were the limit (docs/performance.md).
    static let concurrentBatches = 1

    /// Creates the executor, with its group commit.
    init(client: PostgresClient, schema: PostgresSchema, deadline: PostgresDeadline) {
        self.client = client
        self.schema = schema
        self.deadline = deadline
        let logger = logger
        self.commits = GroupCommit(concurrentBatches: Self.concurrentBatches) { batch in
            await Self.apply(batch, client: client, deadline: deadline, logger: logger)
        }
        self.reads = GroupCommit(concurrentBatches: Self.concurrentBatches) { batch in
            await Self.apply(batch, client: client, deadline: deadline, logger: logger)
        }
    }

    var dialect: SQLDialect { .postgres }

    func table(_ name: String) -> String { schema.table(name) }

    func callDeadline() -> ContinuousClock.Instant? { deadline.end() }

    func query(
        _ operation: StaticString, _ statement: SQLStatement, access: SQLAccess, by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [PostgresStoreRow] {
        try await withConnection(operation, by: end) { connection, logger in
            try await Self.run(statement, on: connection, logger: logger)
        }
    }

    func combinableWrite(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [PostgresStoreRow] {
        try await submit(operation, statement, combinable, to: commits, by: end)
    }

    func combinableRead(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [PostgresStoreRow] {
        // Marked as a read: identical reads of one batch share one answer; writes never are.
        try await submit(operation, statement, combinable.reading(), to: reads, by: end)
    }

    /// Queues a statement in `batches` (the writes' or the reads') unless the store is closed, by `end` or within
    /// the operation timeout.
    private func submit(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        to batches: GroupCommit<PostgresStoreRow>, by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [PostgresStoreRow] {
        try checkOpen()
        let end = end ?? deadline.end()
        return try await StoreError.wrapping(operation, detail: Self.detail) {
            try await batches.submit(statement, by: end, combinable: combinable)
        }
    }

    /// Applies a batch of writes on one connection (``GroupCommit/apply(_:begin:run:commit:rollback:transient:target:)``),
    /// by the latest deadline of its callers: the batch is answered by then whatever the database does. A caller
    /// whose deadline comes earlier (its request spent most of its time before this call) is answered at its own by
    /// the group commit (``GroupCommit/deadlineTolerance``) rather than cutting the batch short for every other
    /// caller, which failed whole batches of healthy requests whenever one late request joined them.
    static func apply(
        _ batch: [GroupCommit<PostgresStoreRow>.Write], client: PostgresClient, deadline: PostgresDeadline,
        logger: Logger
    ) async -> [GroupCommit<PostgresStoreRow>.Outcome] {
        let end = batch.compactMap(\.end).max() ?? deadline.end()
        do {
            return try await deadline.run("applying a batch of writes", by: end) { lease in
                try await client.withConnection { connection in
                    try await lease.use(connection) { connection in
                        func execute(_ sql: String) async throws {
                            _ = try await run(SQLStatement(sql), on: connection, logger: logger)
                        }
                        return await GroupCommit.apply(
                            batch, begin: { try await execute("BEGIN") },
                            run: { statement in try await run(statement, on: connection, logger: logger) },
                            commit: { try await execute("COMMIT") }, rollback: { try? await execute("ROLLBACK") },
                            transient: isDeadlock, target: { row in (try? row.bytes("key_id")) ?? nil })
                    }
                }
            }
        } catch {
            return batch.map { _ in .failure(error) }
        }
    }

    /// Whether `error` is PostgreSQL's deadlock (SQLSTATE 40P01) or serialization failure (40001): two replicas'
    /// batches locking the same keys in different orders. The round runs again.
    static func isDeadlock(_ error: any Error) -> Bool {
        guard let state = (error as? PSQLError)?.serverInfo?[.sqlState] else { return false }
        return state == "40P01" || state == "40001"
    }

    /// Counts the changed rows in the same statement: `WITH changed AS (… RETURNING 1) SELECT count(*)`.
    func changes(_ operation: StaticString, _ statement: SQLStatement) async throws(StoreError) -> Int {
        let counting = SQLStatement(
            "WITH changed AS (\(statement.sql) RETURNING 1) SELECT count(*) AS n FROM changed", statement.binds)
        let rows = try await query(operation, counting, access: .write, by: nil)
        return Int(try rows.first.map { row throws(StoreError) in try row.requiredInteger("n") } ?? 0)
    }

    func transaction<Result: Sendable>(
        _ operation: StaticString, by end: ContinuousClock.Instant?,
        _ body: @escaping @Sendable (_ run: (SQLStatement) async throws -> [PostgresStoreRow]) async throws -> Result
    ) async throws(StoreError) -> Result {
        try await withConnection(operation, by: end) { connection, logger in
            try await connection.withTransaction(logger: logger) { connection in
                try await body { statement in try await Self.run(statement, on: connection, logger: logger) }
            }
        }
    }

    /// Fails when the store is closed.
    func checkOpen() throws(StoreError) {
        guard !closed.withLockedValue({ $0 }) else {
            throw StoreError(.storageUnavailable, "the store is closed")
        }
    }

    /// The client's error code and the server's SQLSTATE, for ``StoreError`` reasons; never the query, its
    /// binds or the server's message, which may quote values.
    static func detail(_ error: any Error) -> String? {
        // A failure inside `withTransaction` comes wrapped, with the statement's error as its closure error.
        if let wrapped = error as? PostgresTransactionError {
            return wrapped.closureError.flatMap(detail) ?? wrapped.rollbackError.flatMap(detail)
                ?? wrapped.beginError.flatMap(detail) ?? wrapped.commitError.flatMap(detail)
        }
        guard let error = error as? PSQLError else { return nil }
        if let state = error.serverInfo?[.sqlState].flatMap(sqlState) {
            return "PostgreSQL \(error.code), SQLSTATE \(state)"
        }
        return "PostgreSQL \(error.code)"
    }

    /// `text` when it is a SQLSTATE (five digits or capital letters), else `nil`: the field is the server's text as
    /// sent, anything from a server that is not PostgreSQL (or one in the way of a connection without TLS), and it
    /// is repeated in logs and errors.
    static func sqlState(_ text: String) -> String? {
        guard text.utf8.count == 5, text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) })
        else { return nil }
        return text
    }

    /// Runs `body` on a pooled connection unless the store is closed, by `end` or within
    /// ``PostgresStoreConfiguration/operationTimeout``; the connection is closed if the deadline passes meanwhile.
    private func withConnection<Result: Sendable>(
        _ operation: StaticString, by end: ContinuousClock.Instant?,
        _ body: @escaping @Sendable (PostgresConnection, Logger) async throws -> Result
    ) async throws(StoreError) -> Result {
        try checkOpen()
        let (deadline, client, logger) = (deadline, client, logger)
        return try await StoreError.wrapping(operation, detail: Self.detail) {
            try await deadline.run(operation, by: end) { lease in
                try await client.withConnection { connection in
                    try await lease.use(connection) { connection in try await body(connection, logger) }
                }
            }
        }
    }

    /// Runs one statement on a leased connection and reads all its rows: the request path's in their prepared form
    /// (``PostgresPreparedStatements``), every other one parsed and planned where it runs.
    static func run(
        _ statement: SQLStatement, on connection: PostgresConnection, logger: Logger
    ) async throws -> [PostgresStoreRow] {
        var binds = PostgresBindings(capacity: statement.binds.count)
        for value in statement.binds {
            switch value {
            case .integer(let value): binds.append(value)
            case .bytes(let bytes): binds.append(bytes.map { ByteBuffer(bytes: $0) })
            case .text(let text): binds.append(text)
            case .integers(let values): binds.append(values)
            case .byteStrings(let values): binds.append(values.map { ByteBuffer(bytes: $0) })
            }
        }
        if let prepared = statement.prepared {
            return try await PostgresPreparedStatements.run(prepared, binds, on: connection, logger: logger)
        }
        let query = PostgresQuery(unsafeSQL: statement.sql, binds: binds)
        return try await connection.query(query, logger: logger).collect().map { PostgresStoreRow($0) }
    }
}

/// A PostgreSQL row read by column name; a missing column or a value of another type is malformed.
struct PostgresStoreRow: StoreRow {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRow) {
        self.row = row.makeRandomAccess()
    }

    func integer(_ column: String) throws(StoreError) -> Int64? {
        try decode(column, Int64?.self)
    }

    func bytes(_ column: String) throws(StoreError) -> [UInt8]? {
        try decode(column, ByteBuffer?.self).map { Array($0.readableBytesView) }
    }

    func text(_ column: String) throws(StoreError) -> String? {
        try decode(column, String?.self)
    }

    private func decode<Value: PostgresDecodable>(_ column: String, _ type: Value.Type) throws(StoreError) -> Value {
        guard row.contains(column) else {
            throw StoreError(.storageUnavailable, "the database returned no column \(column)")
        }
        do {
            return try row[column].decode(type)
        } catch {
            throw StoreError(.storageUnavailable, "the database holds a value of the wrong type in \(column)")
        }
    }
}
