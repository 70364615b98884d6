public import Foundation

/// The receipt refreshes due and not yet done: how many keys are due (counted up to a cap, so that the count never
/// reads a million index entries) and the earliest due time, from
/// ``KeyStore/receiptRefreshBacklog(now:countingUpTo:)``.
public struct ReceiptRefreshBacklog: Sendable, Hashable {
    /// The most keys a backlog counts by default: beyond it, the count reads this value.
    public static let defaultCap = 100_000

    /// Keys due (active, with a receipt, refresh time at or before now), at most the cap asked for.
    public var due: Int
    /// The earliest refresh time at or before now, `nil` when no key is due.
    public var oldestDue: Date?

    /// A backlog.
    public init(due: Int, oldestDue: Date?) {
        self.due = due
        self.oldestDue = oldestDue
    }

    /// Checks a cap: 1 to 10,000,000.
    static func checkCap(_ cap: Int) throws(StoreError) {
        guard (1...10_000_000).contains(cap) else {
            throw StoreError(.invalidInput, "a backlog cap must lie between 1 and 10000000")
        }
    }
}
