import Foundation

/// A request budget shared by every replica of one database: a token bucket that holds at most ``perMinute``
/// requests and refills at ``perMinute`` a minute, spent with ``RateBudgetStore/take(from:now:)``.
///
/// The bucket is kept in the database in millionths of a request, so the stores' single atomic statement works
/// on integers only: of many replicas taking the last request at once, exactly one gets it.
public struct RateBudget: Sendable, Hashable {
    /// The budget's name, such as `attestations/TEAMID.com.example.app`: 1 to 256 bytes.
    public let name: String
    /// Requests a minute, and the burst: 1 to 1,000,000.
    public let perMinute: Int

    /// One request, in the units the bucket is stored in.
    static let unit: Int64 = 1_000_000
    /// The longest time a refill counts for: after a minute the bucket is full anyway.
    static let maximumRefillMilliseconds: Int64 = 60_000

    /// Creates a budget.
    /// - Throws: ``StoreError/Code/invalidInput`` for a name or rate out of range.
    public init(name: String, perMinute: Int) throws(StoreError) {
        guard (1...256).contains(name.utf8.count) else {
            throw StoreError(.invalidInput, "a budget name is 1 to 256 bytes")
        }
        guard (1...1_000_000).contains(perMinute) else {
            throw StoreError(.invalidInput, "a budget is 1 to 1000000 requests a minute")
        }
        self.name = name
        self.perMinute = perMinute
    }

    /// The bucket's capacity in stored units.
    var capacity: Int64 { Int64(perMinute) * Self.unit }

    /// The stored tokens after refilling `tokens` (last updated at `updated`) up to `now`, in stored units: the
    /// same arithmetic as the stores' SQL (integer division, refill counted for at most a minute).
    func refilled(_ tokens: Int64, updated: Int64, now: Int64) -> Int64 {
        let elapsed = min(Self.maximumRefillMilliseconds, max(0, now - updated))
        return min(capacity, tokens + elapsed * Int64(perMinute) * 50 / 3)
    }

    /// The statement that takes one request, for both SQL stores: `INSERT … ON CONFLICT DO UPDATE … WHERE …
    /// RETURNING`, with the refill computed in the database from the stored row under its lock (the same
    /// arithmetic as ``refilled(_:updated:now:)``). It returns a row only when the request fit. Parameters: 1 the
    /// name, 2 requests a minute, 3 now in Unix milliseconds.
    static func takeStatement(table: String, dialect: SQLDialect) -> String {
        let (name, rate, now) = (dialect.parameter(1), dialect.parameter(2), dialect.parameter(3))
        let elapsed = dialect.least("\(maximumRefillMilliseconds)", dialect.greatest("0", "\(now) - b.updated_at_ms"))
        let refilled = dialect.least("\(rate) * \(unit)", "b.tokens + \(elapsed) * \(rate) * 50 / 3")
        return """
            INSERT INTO \(table) AS b (name, tokens, updated_at_ms) VALUES (\(name), \(rate) * \(unit) - \(unit), \(now))
            ON CONFLICT (name) DO UPDATE
            SET tokens = \(refilled) - \(unit), updated_at_ms = \(dialect.greatest("b.updated_at_ms", now))
            WHERE \(refilled) >= \(unit)
            RETURNING tokens
            """
    }

    /// The statement that reads a budget's row after a refusal, to say how long to wait. Parameter 1: the name.
    static func readStatement(table: String, dialect: SQLDialect) -> String {
        "SELECT tokens, updated_at_ms FROM \(table) WHERE name = \(dialect.parameter(1))"
    }

    /// The wait after a refusal, from the budget's row as read after it (`nil` row: the budget is full now).
    func wait(afterRefusal row: (tokens: Int64, updated: Int64)?, now: Int64) -> Int {
        guard let row else { return 1 }
        return wait(available: refilled(row.tokens, updated: row.updated, now: now))
    }

    /// Whole seconds until a request fits, from `tokens` stored units available now (less than one request).
    func wait(available tokens: Int64) -> Int {
        let missing = Double(max(0, Self.unit - tokens)) / Double(Self.unit)
        return max(1, Int((missing * 60 / Double(perMinute)).rounded(.up)))
    }
}
