import AttestKit
import Foundation

/// A store whose operations are the shared SQL of ``SQLStore``: ``SQLiteAttestationStore`` and
/// ``PostgresAttestationStore`` conform, and each keeps only what is its driver's (connections, dialect, schema,
/// ``AttestationStore/prepare()``, ``AttestationStore/close()``, SQLite's writer and group commit, PostgreSQL's
/// deadlines), all behind its ``SQLExecutor``.
///
/// Every operation of ``ChallengeStore``, ``KeyStore``, ``RateBudgetStore``, ``ConsumedTokenStore`` and
/// ``DashboardSessionStore`` is written here once; a new SQL backend writes an executor and gets them all. The calls
/// go straight to ``sql`` (no existential, no allocation, no hop), so a counter advance costs what it costs in
/// ``SQLStore``.
protocol SQLBackedStore: AttestationStore {
    /// The driver the statements run on.
    associatedtype Executor: SQLExecutor

    /// The shared SQL, over the store's executor.
    var sql: SQLStore<Executor> { get }
}

extension SQLBackedStore {
    /// The executor the store's statements run on (internal: tests reach it).
    var executor: Executor { sql.executor }

    // MARK: Lifecycle

    /// Checks that the database answers: one `SELECT 1` on a reader (PostgreSQL: a pooled connection, under the
    /// operation deadline), whatever the tables hold.
    public func ping() async throws(StoreError) {
        try await sql.ping()
    }

    /// Reads PostgreSQL's clock (`clock_timestamp()`) in the one round trip of a ping; SQLite pings and answers `nil`
    /// (its clock is this process's).
    public func databaseTime() async throws(StoreError) -> Date? {
        try await sql.databaseTime()
    }

    // MARK: ChallengeStore

    /// Stores a new challenge: one `INSERT … ON CONFLICT (id) DO NOTHING RETURNING`.
    public func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        try await sql.insertChallenge(challenge)
    }

    /// Consumes a challenge once: one `UPDATE … RETURNING`, then a read only to name a refusal, by one deadline
    /// (PostgreSQL).
    public func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        try await sql.consumeChallenge(id, purpose: purpose, keyID: keyID, now: now)
    }

    /// Undoes a consumption in one statement, only the one `challenge` records
    /// (``ChallengeStore/releaseChallenge(_:)``).
    public func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        try await sql.releaseChallenge(challenge)
    }

    /// Deletes the challenges expired at `now`, in statements of a bounded number of rows each (stopping between two
    /// when the task is cancelled), and returns how many.
    public func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int {
        try await sql.deleteExpiredChallenges(now: now)
    }

    // MARK: KeyStore

    /// Registers a key if absent: one `INSERT … ON CONFLICT (key_id) DO NOTHING RETURNING`.
    public func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        try await sql.registerKey(registration, now: now)
    }

    /// The key with this identifier, or `nil`.
    public func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        try await sql.key(keyID)
    }

    /// The key with this identifier without its receipt's bytes, or `nil`: the receipt's column is not read.
    public func keyWithoutReceipt(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        try await sql.key(keyID, receipt: false)
    }

    /// Advances a counter with one compare-and-set `UPDATE … RETURNING`, then a read only to name a refusal, by one
    /// deadline (PostgreSQL). Concurrent advances of different keys are applied by one statement (group commit).
    @discardableResult
    public func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord {
        try await sql.advanceCounter(of: keyID, to: counter, now: now, usedSince: usedSince)
    }

    /// Stores a newer receipt and appends its risk metric, in one transaction (SQLite: `BEGIN IMMEDIATE`).
    public func storeReceipt(
        _ update: ReceiptUpdate, for keyID: KeyID, now: Date
    ) async throws(StoreError) -> KeyRecord {
        try await sql.storeReceipt(update, for: keyID, now: now)
    }

    /// Moves a key's next receipt exchange, in one statement.
    public func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError) {
        try await sql.postponeReceiptRefresh(of: keyID, until: refreshAt)
    }

    /// A key's risk metrics, newest first.
    public func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry] {
        try await sql.riskHistory(of: keyID, limit: limit)
    }

    /// Revokes a key in one statement; a revoked key is returned unchanged.
    public func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        try await sql.revokeKey(keyID, now: now)
    }

    /// Claims the due keys worth an exchange in one statement, parking the others.
    public func claimReceiptRefresh(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> [KeyRecord] {
        try await sql.claimReceiptRefresh(now: now, limit: limit, lease: lease, activeSince: activeSince).keys
    }

    /// Claims the due keys worth an exchange in one statement, parking the others, and counts both.
    public func claimReceiptRefreshBatch(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> ReceiptRefreshClaim {
        try await sql.claimReceiptRefresh(now: now, limit: limit, lease: lease, activeSince: activeSince)
    }

    /// Deletes a key with its risk history in one statement.
    public func deleteKey(_ keyID: KeyID) async throws(StoreError) {
        try await sql.deleteKey(keyID)
    }

    /// The due keys (counted up to `cap`) and the earliest due time, in one statement over the refresh index.
    public func receiptRefreshBacklog(now: Date, countingUpTo cap: Int) async throws(StoreError)
        -> ReceiptRefreshBacklog
    {
        try await sql.receiptRefreshBacklog(now: now, countingUpTo: cap)
    }

    /// Key counts by environment and state: the rows of a small table that triggers keep in step with every
    /// registration, revocation and deletion, so the read does not grow with the keys.
    public func keyCounts() async throws(StoreError) -> KeyCounts {
        try await sql.keyCounts()
    }

    // MARK: RateBudgetStore

    /// Takes one request from a budget: one `INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING` under the row's
    /// lock (SQLite: on the writer), so callers racing on the last request, on any replica, cannot both get it.
    public func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int? {
        try await sql.take(from: budget, now: now)
    }

    // MARK: ConsumedTokenStore

    /// Records a token as used once: one `INSERT … ON CONFLICT DO NOTHING RETURNING` (SQLite: on the writer).
    public func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) async throws(StoreError) -> Bool {
        try await sql.consumeToken(tokenID, expiresAt: expiresAt, now: now)
    }

    /// Whether a token was consumed: one primary-key read of its record.
    public func isTokenConsumed(_ tokenID: String) async throws(StoreError) -> Bool {
        try await sql.isTokenConsumed(tokenID)
    }

    /// Deletes the records of tokens expired at `now`.
    public func deleteExpiredTokens(now: Date) async throws(StoreError) -> Int {
        try await sql.deleteExpiredTokens(now: now)
    }

    // MARK: DashboardSessionStore

    /// Opens a dashboard session, purging the expired ones and the oldest past `capacity`, in one transaction.
    public func openDashboardSession(
        _ digest: [UInt8], expiresAt: Date, capacity: Int, now: Date
    ) async throws(StoreError) {
        try await sql.openDashboardSession(digest, expiresAt: expiresAt, capacity: capacity, now: now)
    }

    /// Whether a dashboard session is live: one lookup by primary key.
    public func isDashboardSessionLive(_ digest: [UInt8], now: Date) async throws(StoreError) -> Bool {
        try await sql.isDashboardSessionLive(digest, now: now)
    }

    /// Deletes a dashboard session in one statement.
    @discardableResult
    public func closeDashboardSession(_ digest: [UInt8]) async throws(StoreError) -> Bool {
        try await sql.closeDashboardSession(digest)
    }

    /// Deletes the dashboard sessions expired at `now`.
    public func deleteExpiredDashboardSessions(now: Date) async throws(StoreError) -> Int {
        try await sql.deleteExpiredDashboardSessions(now: now)
    }
}
