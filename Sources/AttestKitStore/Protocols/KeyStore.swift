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

    /// The key with this identifier without its receipt's bytes (``KeyRecord/receipt`` is `nil`; the receipt's
    /// times and the risk metric are read), or `nil`: what verifying an assertion reads. The receipt is often a
    /// few kilobytes that the request path never uses; a database keeps it out of line, and reading it costs a
    /// second lookup.
    func keyWithoutReceipt(_ keyID: KeyID) async throws(StoreError) -> KeyRecord?

    /// Advances a key's counter with one compare-and-set: accepted only when `counter` is greater than the
    /// stored counter, the key is active and, when `usedSince` is given, the key was last used (its last accepted
    /// assertion, or its registration before any: ``KeyRecord/lastUsedAt``) at or after `usedSince`. An accepted
    /// advance records `now` as the key's last assertion, in the same statement.
    /// - Parameters:
    ///   - keyID: The key.
    ///   - counter: The assertion's counter.
    ///   - now: The time of the assertion, recorded as the key's last use.
    ///   - usedSince: The oldest last use a key may have and still assert (`keys.expire-after`), or `nil`: keys
    ///     never expire.
    /// - Returns: The key as stored once advanced, read by the same statement that advanced it: its current risk
    ///   metric included, its receipt's bytes not (``KeyRecord/receipt`` is `nil`, as
    ///   ``keyWithoutReceipt(_:)`` reads it).
    /// - Throws: ``StoreError/Code/counterNotIncreasing`` (a replay, or a concurrent copy that lost),
    ///   ``StoreError/Code/keyNotFound``, ``StoreError/Code/keyRevoked``, ``StoreError/Code/keyExpired`` (and the
    ///   counter is not advanced).
    @discardableResult
    func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord

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
    ///
    /// Only keys worth an exchange with Apple are returned: the same statement parks the others among the due keys
    /// it takes, so they leave the due keys at the front of the index and cost no Apple call. A key whose receipt
    /// expired at `now` (``KeyRecord/receiptExpiresAt``) is never due again (Apple refuses an expired receipt);
    /// a key last used (``KeyRecord/lastUsedAt``) before `activeSince` is due again after
    /// ``StoreLimits/idleRefreshPause``, and traded then if it was used in between.
    /// - Throws: ``StoreError/Code/invalidInput`` for a `limit` outside 1 to ``StoreLimits/maximumListLimit``
    ///   or a `lease` outside 1 second to 1 day.
    func claimReceiptRefresh(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> [KeyRecord]

    /// ``claimReceiptRefresh(now:limit:lease:activeSince:)``, answering also how many due keys the statement parked,
    /// so that the caller knows whether the claim took `limit` due keys and more may be due now
    /// (``ReceiptRefreshClaim/reachedLimit(_:)``). A store that does not implement it reports none parked.
    /// - Throws: As ``claimReceiptRefresh(now:limit:lease:activeSince:)``.
    func claimReceiptRefreshBatch(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> ReceiptRefreshClaim

    /// Deletes a key with everything stored about it: its receipt, its risk history (in the same transaction:
    /// `ON DELETE CASCADE`) and its place in the key counts. Its identifier may be registered again afterwards
    /// (unlike a revoked key's); assertions by it are refused with ``StoreError/Code/keyNotFound``.
    /// - Throws: ``StoreError/Code/keyNotFound``.
    func deleteKey(_ keyID: KeyID) async throws(StoreError)

    /// How many keys the store holds, by environment and state.
    func keyCounts() async throws(StoreError) -> KeyCounts

    /// The keys ``claimReceiptRefresh(now:limit:lease:activeSince:)`` would take at `now`, counted up to `cap` (an index
    /// range read that stops at the cap), and the earliest refresh time among them (one index entry).
    /// - Throws: ``StoreError/Code/invalidInput`` for a `cap` outside 1 to 10,000,000.
    func receiptRefreshBacklog(now: Date, countingUpTo cap: Int) async throws(StoreError) -> ReceiptRefreshBacklog
}

extension KeyStore {
    /// ``claimReceiptRefresh(now:limit:lease:activeSince:)`` with no parked keys reported: a store that parks keys
    /// and can count them implements ``claimReceiptRefreshBatch(now:limit:lease:activeSince:)`` itself.
    public func claimReceiptRefreshBatch(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> ReceiptRefreshClaim {
        ReceiptRefreshClaim(
            keys: try await claimReceiptRefresh(now: now, limit: limit, lease: lease, activeSince: activeSince),
            parked: 0)
    }

    /// ``key(_:)`` with its receipt's bytes left out, for a store that reads the whole row anyway.
    public func keyWithoutReceipt(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        try await key(keyID)?.withoutReceipt()
    }

    /// Advances a key's counter, keys never expiring: ``KeyStore/advanceCounter(of:to:now:usedSince:)`` with no
    /// `usedSince`.
    @discardableResult
    public func advanceCounter(of keyID: KeyID, to counter: UInt32, now: Date) async throws(StoreError) -> KeyRecord {
        try await advanceCounter(of: keyID, to: counter, now: now, usedSince: nil)
    }
}
