/// What differs between the SQL of the two database stores, for statements written once.
enum SQLDialect: Sendable {
    case sqlite
    case postgres

    /// The `n`th bind parameter, from 1: `?1` or `$1`.
    func parameter(_ index: Int) -> String {
        switch self {
        case .sqlite: "?\(index)"
        case .postgres: "$\(index)"
        }
    }

    /// The smaller of two values: `min(a, b)` or `LEAST(a, b)`.
    func least(_ lhs: String, _ rhs: String) -> String {
        switch self {
        case .sqlite: "min(\(lhs), \(rhs))"
        case .postgres: "LEAST(\(lhs), \(rhs))"
        }
    }

    /// The larger of two values: `max(a, b)` or `GREATEST(a, b)`.
    func greatest(_ lhs: String, _ rhs: String) -> String {
        switch self {
        case .sqlite: "max(\(lhs), \(rhs))"
        case .postgres: "GREATEST(\(lhs), \(rhs))"
        }
    }

    /// What a claiming subquery adds so that concurrent claimers take different rows: PostgreSQL's ` FOR UPDATE
    /// SKIP LOCKED`; nothing for SQLite, whose single writer runs one claim at a time.
    var skipLocked: String {
        switch self {
        case .sqlite: ""
        case .postgres: " FOR UPDATE SKIP LOCKED"
        }
    }

    /// The statement that reads the database's own clock, in milliseconds since 1970 (column `now_ms`): PostgreSQL's
    /// `clock_timestamp()` (the time of the read itself, not of the transaction's start); `nil` for SQLite, whose
    /// clock is this process's.
    var clockQuery: String? {
        switch self {
        case .sqlite: nil
        case .postgres: "SELECT CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT) AS now_ms"
        }
    }
}
