public import AttestKit
public import Foundation

/// Where registered keys live: their public key, counter, receipt, risk-metric history and revocation.
///
/// One of the small protocols ``AttestationStore`` composes. Registration (only if absent) and the counter's
/// compare-and-set are atomic: a replayed assertion loses on every replica.
public protocol KeyStore: Sendable {
    /// Registers a key with counter 0, only if its identifier is absent.
    /// - Throws: ``StoreError/Code/keyExists`` when the identifier is registered (even if revoked).
    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord

    /// The key with this identifier, or `nil`.
    func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord?

    /// Advances a key's counter with one compare-and-set: accepted only when `counter` is greater than the
    /// stored counter and the key is active.
    /// - Returns: The key as stored once advanced (its current risk metric and receipt included), read by the same
    ///   statement that advanced it.
    /// - Throws: ``StoreError/Code/counterNotIncreasing`` (a replay, or a concurrent copy that lost),
    ///   ``StoreError/Code/keyNotFound``, ``StoreError/Code/keyRevoked``.
    @discardableResult
    func advanceCounter(of keyID: KeyID, to counter: UInt32, now: Date) async throws(StoreError) -> KeyRecord

    /// Stores a newer receipt for an active key and, when it carries a risk metric, appends the metric to
    /// the key's history, in one transaction.
    /// - Throws: ``StoreError/Code/receiptNotNewer`` when the stored receipt was created at the same time or
    ///   later, ``StoreError/Code/keyNotFound``, ``StoreError/Code/keyRevoked``.
    func storeReceipt(_ update: ReceiptUpdate, for keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord

    /// Moves a key's next receipt exchange to `refreshAt` (`nil`: never), for example after Apple answered
    /// 304 or 429.
    /// - Throws: ``StoreError/Code/keyNotFound``.
    func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError)

    /// A key's risk metrics, newest first, at most `limit`.
    func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry]

    /// Revokes a key; revoking a revoked key returns it unchanged.
    /// - Throws: ``StoreError/Code/keyNotFound``.
    func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord

    /// Claims the active keys with a receipt whose refresh time is at or before `now`, the earliest due first, at
    /// most `limit`, moving each one's refresh time to `now + lease` in the same atomic statement (PostgreSQL: `FOR
    /// UPDATE SKIP LOCKED`; SQLite: its single writer). Of concurrent claimers, in one process or across replicas,
    /// each due key goes to one; a claim whose holder stops before storing the new receipt or postponing the key
    /// (a crash) is due again once the lease passes. The records returned carry the lease as their refresh time,
    /// oldest receipt first (ties by identifier bytes), the same on every backend.
    /// - Throws: ``StoreError/Code/invalidInput`` for a `limit` outside 1 to ``StoreLimits/maximumListLimit``
    ///   or a `lease` outside 1 second to 1 day.
    func claimReceiptRefresh(now: Date, limit: Int, lease: Duration) async throws(StoreError) -> [KeyRecord]

    /// How many keys the store holds, by environment and state.
    func keyCounts() async throws(StoreError) -> KeyCounts

    /// The keys ``claimReceiptRefresh(now:limit:lease:)`` would take at `now`, counted up to `cap` (an index
    /// range read that stops at the cap), and the earliest refresh time among them (one index entry).
    /// - Throws: ``StoreError/Code/invalidInput`` for a `cap` outside 1 to 10,000,000.
    func receiptRefreshBacklog(now: Date, countingUpTo cap: Int) async throws(StoreError) -> ReceiptRefreshBacklog
}
