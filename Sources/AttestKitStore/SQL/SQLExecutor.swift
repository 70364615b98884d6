/// A bind value of a ``SQLStatement``: an integer, a blob or a text, each possibly NULL; on PostgreSQL also an array
/// of integers or of byte strings (the request path's prepared statements take one array per column).
enum SQLValue: Sendable {
    /// A 64-bit integer (`INTEGER`, `BIGINT`), or NULL.
    case integer(Int64?)
    /// Bytes (`BLOB`, `BYTEA`), or NULL.
    case bytes([UInt8]?)
    /// UTF-8 text, or NULL.
    case text(String?)
    /// An array of 64-bit integers (`bigint[]`; PostgreSQL only).
    case integers([Int64])
    /// An array of byte strings (`bytea[]`; PostgreSQL only).
    case byteStrings([[UInt8]])
}

/// One parameterised statement: SQL text with the dialect's placeholders (``SQLDialect/parameter(_:)``) and its
/// binds, in the order of the placeholders' numbers. Values never reach the SQL text.
struct SQLStatement: Sendable {
    /// The SQL text.
    let sql: String
    /// The binds: the first is parameter 1.
    let binds: [SQLValue]
    /// The statement kept prepared on each connection that runs the same thing (PostgreSQL's request path), or `nil`
    /// for a statement parsed and planned where it runs.
    let prepared: SQLPreparedStatement?

    /// Creates a statement.
    init(_ sql: String, _ binds: [SQLValue] = [], prepared: SQLPreparedStatement? = nil) {
        self.sql = sql
        self.binds = binds
        self.prepared = prepared
    }
}

/// Whether a statement needs the connection that writes or may run on a read-only one.
enum SQLAccess: Sendable {
    /// A statement that changes the database (SQLite: the single writer connection).
    case write
    /// A statement that only reads (SQLite: a reader connection, which sees the last commit).
    case read
}

/// What ``SQLStore`` needs from a database driver: run a statement, count what one changed, run a transaction.
///
/// An executor is thin: it leases a connection, converts binds and rows, and turns the driver's errors into
/// ``StoreError``s (``StoreError/Code/storageUnavailable`` naming the operation and the driver's error class, never
/// the SQL or a value). The decisions (which statement, what a refusal means) are ``SQLStore``'s, written once.
protocol SQLExecutor: Sendable {
    /// The rows the driver returns, read by column name.
    associatedtype Row: StoreRow & Sendable

    /// The dialect the statements are written in.
    var dialect: SQLDialect { get }

    /// `name` as the statements must write it (PostgreSQL: qualified with the store's schema).
    func table(_ name: String) -> String

    /// The deadline of a store call that starts now, shared by its statements (a refusal's follow-up read shares
    /// its write's), or `nil` for a backend without deadlines.
    func callDeadline() -> ContinuousClock.Instant?

    /// Runs one statement and returns its rows.
    /// - Parameters:
    ///   - operation: What the statement does, for error reasons (`"consuming a challenge"`).
    ///   - end: The call's deadline (``callDeadline()``), or `nil` for a deadline of the statement's own.
    func query(
        _ operation: StaticString, _ statement: SQLStatement, access: SQLAccess, by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [Row]

    /// Runs a write that may be combined with concurrent writes of its kind (group commit) and returns its rows:
    /// `statement` when it runs alone, one row of `combinable`'s statement otherwise. Its rows name their target
    /// in the column `key_id`.
    func combinableWrite(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [Row]

    /// Runs one statement that changes rows (a `DELETE` or an `UPDATE`, without `RETURNING`) and returns how many
    /// it changed.
    /// Runs a read that may be answered together with concurrent reads of its kind, by one statement
    /// (``SQLCombinableWrite`` describes how: the same lookup of different rows, each caller getting the rows whose
    /// target is its own). PostgreSQL batches them, so that many concurrent key reads cost one round trip and one
    /// plan; SQLite, in process, runs each on a reader.
    func combinableRead(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [Row]

    func changes(_ operation: StaticString, _ statement: SQLStatement) async throws(StoreError) -> Int

    /// Runs `body` in one transaction on the writing connection: committed when `body` returns, rolled back when
    /// it throws. `body` runs statements with the function it is given.
    func transaction<Result: Sendable>(
        _ operation: StaticString, by end: ContinuousClock.Instant?,
        _ body: @escaping @Sendable (_ run: (SQLStatement) async throws -> [Row]) async throws -> Result
    ) async throws(StoreError) -> Result
}

extension SQLExecutor {
    /// Runs one statement with a deadline of its own.
    func query(
        _ operation: StaticString, _ statement: SQLStatement, access: SQLAccess
    ) async throws(StoreError) -> [Row] {
        try await query(operation, statement, access: access, by: nil)
    }
}
