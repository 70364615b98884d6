/// A write that group commit may apply together with concurrent writes of its kind, in one statement: the same
/// compare-and-set on different rows (counter advances of different keys). PostgreSQL's key reads combine the same
/// way (``SQLExecutor/combinableRead(_:_:_:by:)``): one lookup of several keys.
///
/// Combining changes no result: the combined statement applies each row's change under the same condition as the
/// write's own statement, and returns the rows it changed, so each caller gets exactly the rows its own statement
/// would have returned (``GroupCommit/apply(_:begin:run:commit:rollback:transient:target:)`` routes them by
/// ``target``). Two writes to one row are never combined: they run in order, in successive statements. Two
/// identical reads (``readOnly``, same kind, target and values) of one batch are answered by one lookup.
struct SQLCombinableWrite: Sendable {
    /// The kind of write: writes of one kind combine.
    let kind: String
    /// The row the write changes (its key), as the combined statement's returned rows name it.
    let target: [UInt8]
    /// This write's values, one row of the combined statement.
    let row: [SQLValue]
    /// Whether the statement only reads (set by the executor's ``SQLExecutor/combinableRead(_:_:_:by:)``, never by
    /// a write): identical reads of one batch then share one answer, as they could not tell it from their own.
    let readOnly: Bool
    /// The statement applying several writes of this kind, given their rows in order.
    let combine: @Sendable (_ rows: [[SQLValue]]) -> SQLStatement

    /// Creates a combinable statement: a write unless `readOnly`.
    init(
        kind: String, target: [UInt8], row: [SQLValue], readOnly: Bool = false,
        combine: @escaping @Sendable (_ rows: [[SQLValue]]) -> SQLStatement
    ) {
        self.kind = kind
        self.target = target
        self.row = row
        self.readOnly = readOnly
        self.combine = combine
    }

    /// The same statement, marked as one that only reads (``readOnly``).
    func reading() -> SQLCombinableWrite {
        SQLCombinableWrite(kind: kind, target: target, row: row, readOnly: true, combine: combine)
    }

    /// Whether `other` is the same read as this one: both only read, of one kind, target and values, so that one
    /// answer is the answer of both. Never true of a write.
    func isSameRead(as other: SQLCombinableWrite) -> Bool {
        readOnly && other.readOnly && kind == other.kind && target == other.target
            && Self.sameValues(row, other.row)
    }

    /// Whether two lists of values are equal, value by value (a NULL equals only a NULL of its type).
    static func sameValues(_ lhs: [SQLValue], _ rhs: [SQLValue]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return zip(lhs, rhs).allSatisfy { pair in
            switch pair {
            case (.integer(let left), .integer(let right)): left == right
            case (.bytes(let left), .bytes(let right)): left == right
            case (.text(let left), .text(let right)): left == right
            case (.integers(let left), .integers(let right)): left == right
            case (.byteStrings(let left), .byteStrings(let right)): left == right
            default: false
            }
        }
    }
}
