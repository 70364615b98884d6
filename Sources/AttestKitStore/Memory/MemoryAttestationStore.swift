public import AttestKit
public import Foundation
import ServiceLifecycle

/// An ``AttestationStore`` held in memory: for tests and single-process tools.
///
/// An actor, so every operation is atomic by construction; the state is lost when the process ends. Its
/// semantics, bounds and error codes are those of the SQL backends.
public actor MemoryAttestationStore: AttestationStore {
    private var challenges: [ChallengeID: StoredChallenge] = [:]
    private var keys: [KeyID: KeyRecord] = [:]
    private var history: [KeyID: [RiskMetricEntry]] = [:]
    private var budgets: [String: (tokens: Int64, updated: Int64)] = [:]
    private var consumedTokens: [String: Date] = [:]
    private var leases: [String: (holder: String, expires: Int64)] = [:]
    private var dashboardSessions: [[UInt8]: (opened: Date, expires: Date)] = [:]
    private var closed = false

    /// Creates an empty store.
    public init() {}

    /// Waits until the service group shuts down or the task is cancelled, then closes the store.
    public func run() async throws {
        try? await gracefulShutdown()
        close()
    }

    /// Nothing to prepare: checks only that the store is open.
    public func prepare() throws(StoreError) {
        try checkOpen()
    }

    /// Answers at once while the store is open.
    public func ping() throws(StoreError) {
        try checkOpen()
    }

    /// Answers `nil` while the store is open: its clock is this process's.
    public func databaseTime() throws(StoreError) -> Date? {
        try checkOpen()
        return nil
    }

    /// Drops every record; further calls fail.
    public func close() {
        closed = true
        challenges = [:]
        keys = [:]
        history = [:]
        consumedTokens = [:]
        dashboardSessions = [:]
        leases = [:]
    }

    // MARK: Job leases

    /// Takes or renews a job's lease; see ``JobLeaseStore/acquireLease(on:holder:duration:now:)``.
    public func acquireLease(on job: String, holder: String, duration: Duration, now: Date) throws(StoreError) -> Bool {
        try checkOpen()
        try StoreLimits.checkLeaseName(job, maximum: 64, "a job name")
        try StoreLimits.checkLeaseName(holder, maximum: 128, "a lease holder")
        let instant = try StoreTime.milliseconds(now, "now")
        let until = try StoreLimits.leaseEnd(instant, duration)
        if let lease = leases[job], lease.expires > instant, lease.holder != holder { return false }
        leases[job] = (holder, until)
        return true
    }

    // MARK: Challenges

    /// Stores a new challenge; see ``ChallengeStore/insertChallenge(_:)``.
    public func insertChallenge(_ challenge: StoredChallenge) throws(StoreError) {
        try checkOpen()
        guard challenge.consumedAt == nil else {
            throw StoreError(.invalidInput, "a new challenge cannot be consumed already")
        }
        guard challenges[challenge.id] == nil else {
            throw StoreError(.invalidInput, "the challenge identifier is already in use")
        }
        challenges[challenge.id] = challenge
    }

    /// Consumes a challenge once; see ``ChallengeStore/consumeChallenge(_:purpose:keyID:now:)``.
    public func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) throws(StoreError) -> StoredChallenge {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        guard let existing = challenges[id], existing.consumedAt == nil, !existing.isExpired(at: instant) else {
            throw StoredChallenge.refusal(for: challenges[id], now: instant)
        }
        let consumed = existing.consumed(at: instant)
        challenges[id] = consumed
        try consumed.checkUse(purpose: purpose, keyID: keyID)
        return consumed
    }

    /// Undoes a consumption; see ``ChallengeStore/releaseChallenge(_:)``.
    public func releaseChallenge(_ challenge: StoredChallenge) throws(StoreError) {
        try checkOpen()
        guard let consumedAt = challenge.consumedAt, let existing = challenges[challenge.id],
            existing.consumedAt == consumedAt
        else { return }
        challenges[challenge.id] = existing.released()
    }

    /// Deletes expired challenges; see ``ChallengeStore/deleteExpiredChallenges(now:)``.
    public func deleteExpiredChallenges(now: Date) throws(StoreError) -> Int {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        let before = challenges.count
        challenges = challenges.filter { !$0.value.isExpired(at: instant) }
        return before - challenges.count
    }

    // MARK: Keys

    /// Registers a key if absent; see ``KeyStore/registerKey(_:now:)``.
    public func registerKey(_ registration: KeyRegistration, now: Date) throws(StoreError) -> KeyRecord {
        try checkOpen()
        let record = KeyRecord(registration: registration, now: try StoreTime.normalized(now, "now"))
        guard keys[registration.keyID] == nil else {
            throw StoreError(.keyExists, "a key with this identifier is already registered")
        }
        keys[registration.keyID] = record
        return record
    }

    /// The key with this identifier, or `nil`.
    public func key(_ keyID: KeyID) throws(StoreError) -> KeyRecord? {
        try checkOpen()
        return keys[keyID]
    }

    /// Advances a counter if greater and the key not expired; see ``KeyStore/advanceCounter(of:to:now:usedSince:)``.
    @discardableResult
    public func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) throws(StoreError) -> KeyRecord {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        let since = try StoreTime.normalized(ifPresent: usedSince, "usedSince")
        guard var record = keys[keyID], record.revokedAt == nil, record.counter < counter,
            !record.isExpired(usedSince: since)
        else {
            throw KeyRecord.counterRefusal(for: keys[keyID], usedSince: since)
        }
        record.counter = counter
        record.lastAssertionAt = instant
        keys[keyID] = record
        return record.withoutReceipt()
    }

    /// Stores a newer receipt; see ``KeyStore/storeReceipt(_:for:now:)``.
    public func storeReceipt(_ update: ReceiptUpdate, for keyID: KeyID, now: Date) throws(StoreError) -> KeyRecord {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        guard var record = keys[keyID], record.revokedAt == nil,
            record.receiptCreatedAt.map({ $0 < update.receiptCreatedAt }) ?? true
        else {
            throw KeyRecord.receiptRefusal(for: keys[keyID])
        }
        record.receipt = update.receipt
        record.receiptCreatedAt = update.receiptCreatedAt
        record.receiptRefreshAt = update.receiptRefreshAt
        record.receiptExpiresAt = update.receiptExpiresAt
        if let metric = update.riskMetric {
            record.riskMetric = metric
            history[keyID, default: []].append(
                RiskMetricEntry(riskMetric: metric, receiptCreatedAt: update.receiptCreatedAt, recordedAt: instant))
        }
        keys[keyID] = record
        return record
    }

    /// Moves the next receipt exchange; see ``KeyStore/postponeReceiptRefresh(of:until:)``.
    public func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) throws(StoreError) {
        try checkOpen()
        let instant = try StoreTime.normalized(ifPresent: refreshAt, "refreshAt")
        guard var record = keys[keyID] else {
            throw StoreError(.keyNotFound, "no key has this identifier")
        }
        record.receiptRefreshAt = instant
        keys[keyID] = record
    }

    /// A key's risk metrics, newest first; see ``KeyStore/riskHistory(of:limit:)``.
    public func riskHistory(of keyID: KeyID, limit: Int) throws(StoreError) -> [RiskMetricEntry] {
        try checkOpen()
        try StoreLimits.checkLimit(limit)
        return Array((history[keyID] ?? []).reversed().prefix(limit))
    }

    /// Revokes a key; see ``KeyStore/revokeKey(_:now:)``.
    public func revokeKey(_ keyID: KeyID, now: Date) throws(StoreError) -> KeyRecord {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        guard var record = keys[keyID] else {
            throw StoreError(.keyNotFound, "no key has this identifier")
        }
        if record.revokedAt == nil {
            record.revokedAt = instant
            keys[keyID] = record
        }
        return record
    }

    /// Claims the keys due for a receipt exchange and parks the due keys not worth one; see
    /// ``KeyStore/claimReceiptRefresh(now:limit:lease:activeSince:)``.
    public func claimReceiptRefresh(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) throws(StoreError) -> [KeyRecord] {
        try claimReceiptRefreshBatch(now: now, limit: limit, lease: lease, activeSince: activeSince).keys
    }

    /// Claims the keys due for a receipt exchange, parks the due keys not worth one, and counts both; see
    /// ``KeyStore/claimReceiptRefreshBatch(now:limit:lease:activeSince:)``.
    public func claimReceiptRefreshBatch(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) throws(StoreError) -> ReceiptRefreshClaim {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        let oldest = try StoreTime.normalized(activeSince, "activeSince")
        try StoreLimits.checkLimit(limit)
        let milliseconds = try StoreTime.milliseconds(instant, "now")
        let until = StoreTime.date(try StoreLimits.leaseEnd(milliseconds, lease))
        let parked = StoreTime.date(try StoreLimits.leaseEnd(milliseconds, StoreLimits.idleRefreshPause))
        let due = keys.values.filter { record in
            guard record.revokedAt == nil, record.receipt != nil, let refreshAt = record.receiptRefreshAt else {
                return false
            }
            return refreshAt <= instant
        }
        let sorted = due.sorted { lhs, rhs in
            // Ties are broken by identifier bytes, as the SQL backends do.
            guard lhs.receiptRefreshAt == rhs.receiptRefreshAt else {
                return (lhs.receiptRefreshAt ?? instant) < (rhs.receiptRefreshAt ?? instant)
            }
            return lhs.keyID.bytes.lexicographicallyPrecedes(rhs.keyID.bytes)
        }
        var claimed: [KeyRecord] = []
        var parkedCount = 0
        for record in sorted.prefix(limit) {
            var changed = record
            let claim = record.refreshClaim(now: instant, activeSince: oldest)
            switch claim {
            case .claim: changed.receiptRefreshAt = until
            case .expired: changed.receiptRefreshAt = nil
            case .idle: changed.receiptRefreshAt = parked
            }
            keys[record.keyID] = changed
            if claim == .claim { claimed.append(changed) } else { parkedCount += 1 }
        }
        return ReceiptRefreshClaim(keys: KeyRecord.claimOrder(claimed), parked: parkedCount)
    }

    /// Deletes a key with its risk history; see ``KeyStore/deleteKey(_:)``.
    public func deleteKey(_ keyID: KeyID) throws(StoreError) {
        try checkOpen()
        guard keys.removeValue(forKey: keyID) != nil else {
            throw StoreError(.keyNotFound, "no key has this identifier")
        }
        history[keyID] = nil
    }

    /// Key counts by environment and state.
    public func keyCounts() throws(StoreError) -> KeyCounts {
        try checkOpen()
        var counts: [KeyCounts.Bucket: Int] = [:]
        for record in keys.values {
            counts[KeyCounts.Bucket(environment: record.environment, state: record.state), default: 0] += 1
        }
        return KeyCounts(counts: counts)
    }

    /// The due keys (counted up to `cap`) and the earliest due time; see
    /// ``KeyStore/receiptRefreshBacklog(now:countingUpTo:)``.
    public func receiptRefreshBacklog(now: Date, countingUpTo cap: Int) throws(StoreError) -> ReceiptRefreshBacklog {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        try ReceiptRefreshBacklog.checkCap(cap)
        let due = keys.values.compactMap { record -> Date? in
            guard record.revokedAt == nil, record.receipt != nil, let refreshAt = record.receiptRefreshAt,
                refreshAt <= instant
            else { return nil }
            return refreshAt
        }
        return ReceiptRefreshBacklog(due: min(cap, due.count), oldestDue: due.min())
    }

    /// Takes one request from a budget.
    public func take(from budget: RateBudget, now: Date) throws(StoreError) -> Int? {
        try checkOpen()
        let instant = try StoreTime.milliseconds(now, "now")
        let stored = budgets[budget.name] ?? (budget.capacity, instant)
        let available = budget.refilled(stored.tokens, updated: stored.updated, now: instant)
        guard available >= RateBudget.unit else { return budget.wait(available: available, now: instant) }
        budgets[budget.name] = (available - RateBudget.unit, max(stored.updated, instant))
        return nil
    }

    /// Records a token as used once; see ``ConsumedTokenStore/consumeToken(_:expiresAt:now:)``.
    public func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) throws(StoreError) -> Bool {
        try checkOpen()
        try StoreLimits.checkTokenID(tokenID)
        _ = try StoreTime.normalized(now, "now")
        // Both times checked before the record is looked at, as the SQL stores bind them before the statement runs.
        let expiry = try StoreTime.normalized(expiresAt, "expiresAt")
        guard consumedTokens[tokenID] == nil else { return false }
        consumedTokens[tokenID] = expiry
        return true
    }

    /// Whether a token was consumed; see ``ConsumedTokenStore/isTokenConsumed(_:)``.
    public func isTokenConsumed(_ tokenID: String) throws(StoreError) -> Bool {
        try checkOpen()
        try StoreLimits.checkTokenID(tokenID)
        return consumedTokens[tokenID] != nil
    }

    /// Deletes the records of tokens expired at `now`; see ``ConsumedTokenStore/deleteExpiredTokens(now:)``.
    public func deleteExpiredTokens(now: Date) throws(StoreError) -> Int {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        let expired = consumedTokens.filter { $0.value <= instant }.map(\.key)
        for tokenID in expired { consumedTokens[tokenID] = nil }
        return expired.count
    }

    // MARK: Dashboard sessions

    /// Opens a dashboard session; see ``DashboardSessionStore/openDashboardSession(_:expiresAt:capacity:now:)``.
    public func openDashboardSession(
        _ digest: [UInt8], expiresAt: Date, capacity: Int, now: Date
    ) throws(StoreError) {
        try checkOpen()
        try StoreLimits.checkSessionDigest(digest)
        try StoreLimits.checkSessionCapacity(capacity)
        let instant = try StoreTime.normalized(now, "now")
        let expiry = try StoreTime.normalized(expiresAt, "expiresAt")
        guard expiry > instant else { throw StoreError(.invalidInput, "a session must expire after it opens") }
        dashboardSessions = dashboardSessions.filter { $0.value.expires > instant }
        if dashboardSessions[digest] == nil { dashboardSessions[digest] = (instant, expiry) }
        // The newest `capacity - 1` others are kept, as the SQL backends do (ties broken by the digest's bytes).
        let others = dashboardSessions.filter { $0.key != digest }.sorted { lhs, rhs in
            guard lhs.value.opened == rhs.value.opened else { return lhs.value.opened > rhs.value.opened }
            return rhs.key.lexicographicallyPrecedes(lhs.key)
        }
        for (dropped, _) in others.dropFirst(capacity - 1) { dashboardSessions[dropped] = nil }
    }

    /// Whether a dashboard session is live; see ``DashboardSessionStore/isDashboardSessionLive(_:now:)``.
    public func isDashboardSessionLive(_ digest: [UInt8], now: Date) throws(StoreError) -> Bool {
        try checkOpen()
        try StoreLimits.checkSessionDigest(digest)
        let instant = try StoreTime.normalized(now, "now")
        return dashboardSessions[digest].map { $0.expires > instant } ?? false
    }

    /// Deletes a dashboard session; see ``DashboardSessionStore/closeDashboardSession(_:)``.
    @discardableResult
    public func closeDashboardSession(_ digest: [UInt8]) throws(StoreError) -> Bool {
        try checkOpen()
        try StoreLimits.checkSessionDigest(digest)
        return dashboardSessions.removeValue(forKey: digest) != nil
    }

    /// Deletes the dashboard sessions expired at `now`; see
    /// ``DashboardSessionStore/deleteExpiredDashboardSessions(now:)``.
    public func deleteExpiredDashboardSessions(now: Date) throws(StoreError) -> Int {
        try checkOpen()
        let instant = try StoreTime.normalized(now, "now")
        let before = dashboardSessions.count
        dashboardSessions = dashboardSessions.filter { $0.value.expires > instant }
        return before - dashboardSessions.count
    }

    private func checkOpen() throws(StoreError) {
        guard !closed else { throw StoreError(.storageUnavailable, "the store is closed") }
    }
}
