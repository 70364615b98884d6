import NIOCore
import SQLiteNIO

/// The ``SQLExecutor`` of ``SQLiteAttestationStore``: statements on the connections of its
/// ``SQLiteConnectionPool``, writes on the single writer and reads on a reader.
///
/// Single-statement writes go through ``commits``: the writes that arrive while the writer is busy are applied
/// together in one `BEGIN IMMEDIATE … COMMIT`, one `fsync` for the batch instead of one per write, and the counter
/// advances among them by one statement per round of distinct keys.
///
/// SQLite has no operation deadline: a statement waits at most the busy timeout for another process's lock.
struct SQLiteExecutor: SQLExecutor {
    /// The store's connections.
    let pool: SQLiteConnectionPool
    /// The group commit of single-statement writes, on the writer.
    let commits: GroupCommit<SQLiteStoreRow>

    /// Creates the executor of `pool`, with its group commit.
    init(pool: SQLiteConnectionPool) {
        self.pool = pool
        self.commits = GroupCommit { batch in await Self.apply(batch, pool: pool) }
    }

    var dialect: SQLDialect { .sqlite }

    func table(_ name: String) -> String { name }

    func callDeadline() -> ContinuousClock.Instant? { nil }

    func query(
        _ operation: StaticString, _ statement: SQLStatement, access: SQLAccess, by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [SQLiteStoreRow] {
        switch access {
        case .write:
            try await StoreError.wrapping(operation, detail: Self.detail) { try await commits.submit(statement) }
        case .read:
            try await lease(.reader, operation) { connection in try await Self.run(statement, on: connection) }
        }
    }

    func combinableWrite(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [SQLiteStoreRow] {
        try await StoreError.wrapping(operation, detail: Self.detail) {
            try await commits.submit(statement, combinable: combinable)
        }
    }

    /// A reader runs it alone: in process, a batch would save no round trip.
    func combinableRead(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [SQLiteStoreRow] {
        try await query(operation, statement, access: .read, by: end)
    }

    /// Applies a batch of writes on the writer, in one `BEGIN IMMEDIATE … COMMIT` (``GroupCommit/apply(_:begin:run:commit:rollback:)``).
    static func apply(
        _ batch: [GroupCommit<SQLiteStoreRow>.Write], pool: SQLiteConnectionPool
    ) async -> [GroupCommit<SQLiteStoreRow>.Outcome] {
        let connection: SQLiteConnection
        do {
            connection = try await pool.acquire(.writer)
        } catch {
            return batch.map { _ in .failure(error) }
        }
        let outcomes = await GroupCommit.apply(
            batch,
            begin: { _ = try await connection.query("BEGIN IMMEDIATE") },
            run: { statement in try await run(statement, on: connection) },
            commit: { _ = try await connection.query("COMMIT") },
            rollback: { _ = try? await connection.query("ROLLBACK") },
            target: { row in (try? row.bytes("key_id")) ?? nil })
        await pool.release(connection, .writer)
        return outcomes
    }

    func changes(_ operation: StaticString, _ statement: SQLStatement) async throws(StoreError) -> Int {
        try await lease(.writer, operation) { connection in
            // The statement and its count run together, out of the caller's cancellation: SQLiteNIO refuses a
            // query of a cancelled task, so a cancellation between the two reported as failed a statement that had
            // committed (a logout, a released challenge, a cleanup batch). PostgreSQL counts in the statement.
            try await Task {
                _ = try await Self.run(statement, on: connection)
                return try await connection.query("SELECT changes() AS n").first?.column("n")?.integer ?? 0
            }.value
        }
    }

    /// Runs `body` in `BEGIN IMMEDIATE … COMMIT` on the writer (``transaction(on:_:)``).
    func transaction<Result: Sendable>(
        _ operation: StaticString, by end: ContinuousClock.Instant?,
        _ body: @escaping @Sendable (_ run: (SQLStatement) async throws -> [SQLiteStoreRow]) async throws -> Result
    ) async throws(StoreError) -> Result {
        try await lease(.writer, operation) { connection in
            try await Self.transaction(on: connection) {
                try await body { statement in try await Self.run(statement, on: connection) }
            }
        }
    }

    /// Runs `body` on a connection of `role`, leased for the call and given back after it.
    func lease<Result: Sendable>(
        _ role: SQLiteConnectionPool.Role, _ operation: StaticString,
        _ body: (SQLiteConnection) async throws -> Result
    ) async throws(StoreError) -> Result {
        try await StoreError.wrapping(operation, detail: Self.detail) {
            let connection = try await pool.acquire(role)
            do {
                let result = try await body(connection)
                await pool.release(connection, role)
                return result
            } catch {
                await pool.release(connection, role)
                throw error
            }
        }
    }

    /// Runs one statement on a leased connection and reads all its rows.
    static func run(
        _ statement: SQLStatement, on connection: SQLiteConnection
    ) async throws -> [SQLiteStoreRow] {
        let binds = try statement.binds.map { value throws(StoreError) -> SQLiteData in
            switch value {
            case .integer(let value): value.map { .integer(SQLiteInt64($0)) } ?? .null
            case .bytes(let bytes): bytes.map { .blob(ByteBuffer(bytes: $0)) } ?? .null
            case .text(let text): text.map { .text($0) } ?? .null
            case .integers, .byteStrings:
                throw StoreError(.storageUnavailable, "SQLite has no array values; the statement is PostgreSQL's")
            }
        }
        return try await connection.query(statement.sql, binds).map { SQLiteStoreRow(row: $0) }
    }

    /// Runs `body` inside `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws. `IMMEDIATE` takes the write
    /// lock at once, so a transaction that reads before it writes cannot deadlock against another writer.
    ///
    /// Once begun, the transaction ends whatever happens to the calling task: SQLiteNIO's async `query` refuses
    /// work for a cancelled task, so a `COMMIT` or `ROLLBACK` sent that way after a cancellation never ran and the
    /// writer went back to the pool inside the open transaction, where every later write was answered as done and
    /// never committed. They go through the future-based `query`, which runs regardless.
    static func transaction<Result>(
        on connection: SQLiteConnection, _ body: () async throws -> Result
    ) async throws -> Result {
        _ = try await connection.query("BEGIN IMMEDIATE")
        let result: Result
        do {
            result = try await body()
        } catch {
            await rollback(connection)
            throw error
        }
        do {
            try await end("COMMIT", connection)
        } catch {
            await rollback(connection)
            throw error
        }
        return result
    }

    /// `ROLLBACK`, even for a cancelled task; a failure (no transaction left to roll back) is ignored.
    private static func rollback(_ connection: SQLiteConnection) async {
        try? await end("ROLLBACK", connection)
    }

    /// Runs `COMMIT` or `ROLLBACK` through the future-based `query`, which a cancelled task does not prevent.
    private static func end(_ statement: String, _ connection: SQLiteConnection) async throws {
        let ending: EventLoopFuture<[SQLiteRow]> = connection.query(statement, [])
        _ = try await ending.get()
    }

    /// SQLite's error class (`busy`, `corrupt`, `notADatabase`, …) for ``StoreError`` reasons; never its
    /// message, which may quote SQL.
    static func detail(_ error: any Error) -> String? {
        (error as? SQLiteError).map { "SQLite \($0.reason)" }
    }
}

/// An SQLite row read by column name, with strict types: a column of another type is malformed.
struct SQLiteStoreRow: StoreRow {
    let row: SQLiteRow

    func integer(_ column: String) throws(StoreError) -> Int64? {
        switch row.column(column) {
        case .integer(let value): return Int64(value)
        case .null: return nil
        default: throw malformed(column)
        }
    }

    func bytes(_ column: String) throws(StoreError) -> [UInt8]? {
        switch row.column(column) {
        case .blob(let buffer): return Array(buffer.readableBytesView)
        case .null: return nil
        default: throw malformed(column)
        }
    }

    func text(_ column: String) throws(StoreError) -> String? {
        switch row.column(column) {
        case .text(let value): return value
        case .null: return nil
        default: throw malformed(column)
        }
    }

    private func malformed(_ column: String) -> StoreError {
        StoreError(.storageUnavailable, "the database holds a value of the wrong type in \(column)")
    }
}
