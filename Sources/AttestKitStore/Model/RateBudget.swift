public import Foundation

/// A request budget shared by every replica of one database: a token bucket that holds at most ``burst`` requests
/// and refills at ``requests`` a ``period``, spent with ``RateBudgetStore/take(from:now:)``.
///
/// The bucket is kept in the database in millionths of a request, so the stores' single atomic statement works
/// on integers only: of many replicas taking the last request at once, exactly one gets it.
///
/// A budget of `perMinute` (the per-app attestation limit) holds a minute's worth; a budget of `perSecond` with a
/// burst of one (the fleet's ceiling on Apple receipt calls) spaces requests a `1/perSecond` second apart, so that
/// no window of one second ever holds more than `perSecond` of them (a burst of a whole second's worth would let a
/// second-long window hold up to twice that).
///
/// A budget of ``daily(name:ceiling:now:)`` is a fixed window instead: `ceiling` requests for the UTC day of `now`,
/// not refilled within it (its name carries the day, so the next day starts full), the ceiling of new attestations
/// of the attestation ramp.
public struct RateBudget: Sendable, Hashable {
    /// How long a budget takes to refill ``RateBudget/requests``.
    public struct Period: Sendable, Hashable {
        /// The period in milliseconds.
        let milliseconds: Int64
        /// A minute.
        public static let minute = Period(milliseconds: 60_000)
        /// A second.
        public static let second = Period(milliseconds: 1_000)
    }

    /// The budget's name, such as `attestations/TEAMID.com.example.app`: 1 to 256 bytes.
    public let name: String
    /// Requests a ``period``: 1 to 1,000,000.
    public let requests: Int
    /// The time in which ``requests`` refill.
    public let period: Period
    /// The most requests the bucket holds (taken at once after a pause): 1 to ``requests``.
    public let burst: Int
    /// Requests refilled a ``period``: ``requests``, or 0 for a budget of ``daily(name:ceiling:now:)``, which is
    /// never refilled.
    let refill: Int
    /// For a budget of ``daily(name:ceiling:now:)``: when its UTC day ends, in Unix milliseconds; `nil` otherwise.
    let windowEnd: Int64?

    /// One request, in the units the bucket is stored in.
    static let unit: Int64 = 1_000_000

    /// Creates a budget of `perMinute` requests a minute whose burst is a whole minute's worth.
    /// - Throws: ``StoreError/Code/invalidInput`` for a name or rate out of range.
    public init(name: String, perMinute: Int) throws(StoreError) {
        try self.init(name: name, requests: perMinute, period: .minute, burst: perMinute)
    }

    /// Creates a budget of `perSecond` requests a second holding at most `burst` (by default one: requests spaced
    /// evenly, never more than `perSecond` in any window of a second).
    /// - Throws: ``StoreError/Code/invalidInput`` for a name, rate or burst out of range.
    public init(name: String, perSecond: Int, burst: Int = 1) throws(StoreError) {
        try self.init(name: name, requests: perSecond, period: .second, burst: burst)
    }

    private init(
        name: String, requests: Int, period: Period, burst: Int, refill: Int? = nil, windowEnd: Int64? = nil
    ) throws(StoreError) {
        guard (1...256).contains(name.utf8.count) else {
            throw StoreError(.invalidInput, "a budget name is 1 to 256 bytes")
        }
        // PostgreSQL's text refuses NUL and SQLite's length() stops at it: the stores would disagree (a 503 on one,
        // a budget on another) where the caller's argument is what is wrong.
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw StoreError(.invalidInput, "a budget name has no control characters")
        }
        guard (1...1_000_000).contains(requests) else {
            throw StoreError(.invalidInput, "a budget is 1 to 1000000 requests a period")
        }
        guard (1...requests).contains(burst) else {
            throw StoreError(.invalidInput, "a budget's burst is 1 to its requests a period")
        }
        (self.name, self.requests, self.period, self.burst) = (name, requests, period, burst)
        (self.refill, self.windowEnd) = (refill ?? requests, windowEnd)
    }

    /// A budget of `ceiling` requests for the UTC day of `now`, never refilled within it: its name is `name`, a
    /// slash and the number of the day since 1970 (so the next UTC day is another, full budget), and a refusal
    /// waits until the day ends. One row a day stays in the store for each name.
    /// - Throws: ``StoreError/Code/invalidInput`` for a name or ceiling out of range, or `now` out of range.
    public static func daily(name: String, ceiling: Int, now: Date) throws(StoreError) -> RateBudget {
        let instant = try StoreTime.milliseconds(now, "now")
        let day = instant >= 0 ? instant / dayMilliseconds : (instant - dayMilliseconds + 1) / dayMilliseconds
        return try RateBudget(
            name: "\(name)/\(day)", requests: ceiling, period: .minute, burst: ceiling, refill: 0,
            windowEnd: (day + 1) * dayMilliseconds)
    }

    /// A UTC day in milliseconds.
    static let dayMilliseconds: Int64 = 86_400_000

    /// The bucket's capacity in stored units.
    var capacity: Int64 { Int64(burst) * Self.unit }

    /// The stored tokens after refilling `tokens` (last updated at `updated`) up to `now`, in stored units: the
    /// same arithmetic as the stores' SQL (integer division, refill counted for at most one period, after which
    /// the bucket is full anyway).
    func refilled(_ tokens: Int64, updated: Int64, now: Int64) -> Int64 {
        let elapsed = min(period.milliseconds, max(0, now - updated))
        return min(capacity, tokens + elapsed * Int64(refill) * Self.unit / period.milliseconds)
    }

    /// The statement that takes one request, for both SQL stores: `INSERT … ON CONFLICT DO UPDATE … WHERE …
    /// RETURNING`, with the refill computed in the database from the stored row under its lock (the same
    /// arithmetic as ``refilled(_:updated:now:)``). It returns a row only when the request fit. Parameters: 1 the
    /// name, 2 the burst, 3 now in Unix milliseconds, 4 requests refilled a period (``refill``), 5 the period in
    /// milliseconds.
    static func takeStatement(table: String, dialect: SQLDialect) -> String {
        let (name, burst, now) = (dialect.parameter(1), dialect.parameter(2), dialect.parameter(3))
        let (rate, period) = (dialect.parameter(4), dialect.parameter(5))
        let elapsed = dialect.least(period, dialect.greatest("0", "\(now) - b.updated_at_ms"))
        let refilled = dialect.least("\(burst) * \(unit)", "b.tokens + \(elapsed) * \(rate) * \(unit) / \(period)")
        return """
            INSERT INTO \(table) AS b (name, tokens, updated_at_ms) VALUES (\(name), \(burst) * \(unit) - \(unit), \(now))
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
        if let windowEnd { return Self.seconds(until: windowEnd, from: now) }
        guard let row else { return 1 }
        return wait(available: refilled(row.tokens, updated: row.updated, now: now), now: now)
    }

    /// Whole seconds until a request fits, from `tokens` stored units available now (less than one request): at
    /// least one.
    func wait(available tokens: Int64, now: Int64) -> Int {
        if let windowEnd { return Self.seconds(until: windowEnd, from: now) }
        let missing = Double(max(0, Self.unit - tokens)) / Double(Self.unit)
        let seconds = missing * Double(period.milliseconds) / 1_000 / Double(requests)
        return max(1, Int(seconds.rounded(.up)))
    }

    /// Whole seconds from `now` until `end` (Unix milliseconds), rounded up: at least one.
    static func seconds(until end: Int64, from now: Int64) -> Int {
        max(1, Int((max(0, end - now) + 999) / 1_000))
    }
}
