/// What one claim of due receipt refreshes took (``KeyStore/claimReceiptRefreshBatch(now:limit:lease:activeSince:)``):
/// the keys claimed for an exchange with Apple, and how many other due keys the same statement parked (expired
/// receipts, idle keys).
///
/// A claim that took as many due keys as it was allowed (``reachedLimit(_:)``) may have left more due: its caller
/// claims again at once instead of waiting for its next interval, so that keys due in bulk (a day's refreshes, idle
/// keys coming due together) are worked through at the pace of Apple's answers, not of one batch an interval.
public struct ReceiptRefreshClaim: Sendable, Hashable {
    /// The claimed keys, each with the lease's end as its refresh time, oldest receipt first.
    public var keys: [KeyRecord]
    /// How many due keys the claim parked rather than claimed.
    public var parked: Int

    /// Creates a claim's outcome.
    public init(keys: [KeyRecord], parked: Int) {
        self.keys = keys
        self.parked = max(0, parked)
    }

    /// How many due keys the claim took: claimed and parked.
    public var taken: Int { keys.count + parked }

    /// Whether the claim took `limit` due keys (or more): more may be due.
    public func reachedLimit(_ limit: Int) -> Bool { taken >= limit }
}
