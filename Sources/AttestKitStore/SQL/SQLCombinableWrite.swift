/// A write that group commit may apply together with concurrent writes of its kind, in one statement: the same
/// compare-and-set on different rows (counter advances of different keys). PostgreSQL's key reads combine the same
/// way (``SQLExecutor/combinableRead(_:_:_:by:)``): one lookup of several keys.
///
/// Combining changes no result: the combined statement applies each row's change under the same condition as the
/// write's own statement, and returns the rows it changed, so each caller gets exactly the rows its own statement
/// would have returned (``GroupCommit/apply(_:begin:run:commit:rollback:transient:target:)`` routes them by
/// ``target``). Two writes to one row are never combined: they run in order, in successive statements.
struct SQLCombinableWrite: Sendable {
    /// The kind of write: writes of one kind combine.
    let kind: String
    /// The row the write changes (its key), as the combined statement's returned rows name it.
    let target: [UInt8]
    /// This write's values, one row of the combined statement.
    let row: [SQLValue]
    /// The statement applying several writes of this kind, given their rows in order.
    let combine: @Sendable (_ rows: [[SQLValue]]) -> SQLStatement
}
