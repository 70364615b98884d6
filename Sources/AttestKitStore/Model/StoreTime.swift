import Foundation

/// Times as every backend stores them: whole milliseconds since 1970, in a signed 64-bit integer.
///
/// Every `Date` that enters a store is rounded to the millisecond first, so the in-memory, SQLite and
/// PostgreSQL backends compare and return exactly the same instants.
enum StoreTime {
    /// The latest instant a store accepts: 9999-12-31T23:59:59.999Z.
    static let maximumMilliseconds: Int64 = 253_402_300_799_999

    /// `date` in milliseconds since 1970.
    /// - Throws: ``StoreError/Code/invalidInput`` when `date` is before 1970, after 9999 or not finite.
    static func milliseconds(_ date: Date, _ name: StaticString) throws(StoreError) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        guard value.isFinite, value >= 0, value <= Double(maximumMilliseconds) else {
            throw StoreError(.invalidInput, "\(name) must lie between 1970 and 9999")
        }
        return Int64(value)
    }

    /// `date` in milliseconds, or `nil`.
    static func milliseconds(ifPresent date: Date?, _ name: StaticString) throws(StoreError) -> Int64? {
        guard let date else { return nil }
        return try milliseconds(date, name)
    }

    /// The instant `milliseconds` after 1970.
    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// The instant `milliseconds` after 1970, or `nil`.
    static func date(ifPresent milliseconds: Int64?) -> Date? {
        milliseconds.map { date($0) }
    }

    /// `date` rounded to the millisecond, as the store will keep it.
    static func normalized(_ date: Date, _ name: StaticString) throws(StoreError) -> Date {
        Self.date(try milliseconds(date, name))
    }

    /// `date` rounded to the millisecond, or `nil`.
    static func normalized(ifPresent date: Date?, _ name: StaticString) throws(StoreError) -> Date? {
        guard let date else { return nil }
        return try normalized(date, name)
    }

    /// A duration in whole milliseconds, within `range`.
    static func milliseconds(
        _ duration: Duration, in range: ClosedRange<Int64>, _ name: StaticString
    ) throws(StoreError) -> Int64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, seconds <= range.upperBound / 1000 + 1 else {
            throw StoreError(.invalidInput, "\(name) is out of range")
        }
        let value = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        guard range.contains(value) else {
            throw StoreError(.invalidInput, "\(name) is out of range")
        }
        return value
    }
}
