public import AttestKit
public import Foundation
public import Logging
import SQLiteNIO
import ServiceLifecycle

/// An ``AttestationStore`` in one SQLite file: the embedded default, with nothing to install.
///
/// The file and its directory are created on first use (mode 0600). The database runs in WAL mode with
/// `synchronous=FULL`, so an operation that returned is on disk even if the process is killed the next
/// instant; `busy_timeout` bounds the wait for another process's write lock. The schema is versioned and
/// migrated on first use.
///
/// Writes go through one connection, reads through a few more. Concurrent single-statement writes are committed
/// together (group commit: one transaction and one `fsync` per batch), each caller answered once its batch is on
/// disk; each decision is one statement
/// (`UPDATE … RETURNING`, `INSERT … ON CONFLICT DO NOTHING`) or one `BEGIN IMMEDIATE` transaction. Several
/// processes may open the same file: SQLite's locks serialise their writes.
public final class SQLiteAttestationStore: AttestationStore {
    /// Settings of an SQLite store.
    public struct Configuration: Sendable {
        /// The database file. Relative paths are resolved against the working directory.
        public var path: String
        /// How many read-only connections to open at most, besides the writer; 0 sends reads to the writer.
        public var readerCount: Int
        /// How long a statement waits for another process's write lock before failing.
        public var busyTimeout: Duration

        /// Creates a configuration.
        public init(path: String, readerCount: Int = 2, busyTimeout: Duration = .seconds(10)) {
            self.path = path
            self.readerCount = readerCount
            self.busyTimeout = busyTimeout
        }
    }

    /// The configuration the store was created with.
    public let configuration: Configuration
    private let pool: SQLiteConnectionPool
    private let store: SQLStore<SQLiteExecutor>
    /// The executor the store's statements run on (internal: tests reach its group commit).
    var executor: SQLiteExecutor { store.executor }

    /// Creates a store; nothing is opened until ``prepare()`` or the first operation.
    public init(configuration: Configuration, logger: Logger = StoreLogging.silent) {
        self.configuration = configuration
        let milliseconds =
            configuration.busyTimeout.components.seconds * 1000
            + configuration.busyTimeout.components.attoseconds / 1_000_000_000_000_000
        self.pool = SQLiteConnectionPool(
            path: configuration.path,
            readerCount: max(0, min(configuration.readerCount, 16)),
            busyTimeoutMilliseconds: Int(max(0, min(milliseconds, 3_600_000))),
            logger: logger)
        self.store = SQLStore(executor: SQLiteExecutor(pool: pool))
    }

    /// Creates a store at `path` with default settings.
    public convenience init(path: String, logger: Logger = StoreLogging.silent) {
        self.init(configuration: Configuration(path: path), logger: logger)
    }

    /// Waits until the service group shuts down or the task is cancelled, then closes the connections.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    /// Creates the file and its directory if needed, switches to WAL and migrates the schema.
    public func prepare() async throws(StoreError) {
        try await StoreError.wrapping("opening the SQLite database", detail: SQLiteExecutor.detail) {
            try await pool.prepare()
        }
    }

    /// Applies the writes already accepted (and answers their callers), then closes idle connections now and leased
    /// ones when they return; later calls fail.
    public func close() async {
        await store.executor.commits.close()
        await pool.close()
    }

    // MARK: Operations

    /// Stores a new challenge: one `INSERT … ON CONFLICT (id) DO NOTHING RETURNING`.
    public func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        try await store.insertChallenge(challenge)
    }

    /// Consumes a challenge once: one `UPDATE … RETURNING`, then a read only to name a refusal.
    public func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        try await store.consumeChallenge(id, purpose: purpose, keyID: keyID, now: now)
    }

    /// Deletes the challenges expired at `now` in one statement and returns how many.
    public func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int {
        try await store.deleteExpiredChallenges(now: now)
    }

    /// Registers a key if absent: one `INSERT … ON CONFLICT (key_id) DO NOTHING RETURNING`.
    public func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        try await store.registerKey(registration, now: now)
    }

    /// The key with this identifier, or `nil`.
    public func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        try await store.key(keyID)
    }

    /// Advances a counter with one compare-and-set `UPDATE … RETURNING`, then a read only to name a refusal.
    /// Concurrent advances of different keys are applied by one statement (group commit).
    @discardableResult
    public func advanceCounter(of keyID: KeyID, to counter: UInt32, now: Date) async throws(StoreError) -> KeyRecord {
        try await store.advanceCounter(of: keyID, to: counter, now: now)
    }

    /// Stores a newer receipt and appends its risk metric, in one `BEGIN IMMEDIATE` transaction.
    public func storeReceipt(
        _ update: ReceiptUpdate, for keyID: KeyID, now: Date
    ) async throws(StoreError) -> KeyRecord {
        try await store.storeReceipt(update, for: keyID, now: now)
    }

    /// Moves a key's next receipt exchange, in one statement.
    public func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError) {
        try await store.postponeReceiptRefresh(of: keyID, until: refreshAt)
    }

    /// A key's risk metrics, newest first.
    public func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry] {
        try await store.riskHistory(of: keyID, limit: limit)
    }

    /// Revokes a key in one statement; a revoked key is returned unchanged.
    public func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        try await store.revokeKey(keyID, now: now)
    }

    /// Active keys with a receipt due for exchange at `now`, earliest first.
    public func keysDueForReceiptRefresh(now: Date, limit: Int) async throws(StoreError) -> [KeyRecord] {
        try await store.keysDueForReceiptRefresh(now: now, limit: limit)
    }

    /// Key counts by environment and state, in one `GROUP BY`.
    public func keyCounts() async throws(StoreError) -> KeyCounts {
        try await store.keyCounts()
    }

    /// Takes one request from a budget: one `INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING` on the writer.
    public func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int? {
        try await store.take(from: budget, now: now)
    }

    /// Records a token as used once: one `INSERT … ON CONFLICT DO NOTHING RETURNING` (on the writer).
    public func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) async throws(StoreError) -> Bool {
        try await store.consumeToken(tokenID, expiresAt: expiresAt, now: now)
    }

    /// Deletes the records of tokens expired at `now`.
    public func deleteExpiredTokens(now: Date) async throws(StoreError) -> Int {
        try await store.deleteExpiredTokens(now: now)
    }

    // MARK: Testing

    /// Runs one statement on the writer connection and returns the first column of its first row as an integer,
    /// for tests that put the database into the state of a failing disk: `PRAGMA query_only = ON` (writes fail as on
    /// a read-only file), `PRAGMA max_page_count = 1` (the file cannot grow, as on a full disk).
    package func executeOnWriter(_ sql: String) async throws(StoreError) -> Int? {
        try await store.executor.lease(.writer, "a test statement") { connection in
            try await connection.query(sql).first?.columns.first?.data.integer
        }
    }
}
