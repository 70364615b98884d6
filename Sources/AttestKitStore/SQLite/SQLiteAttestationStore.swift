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
/// Writes go through one connection, reads through a few more; each decision is one statement
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
        try await StoreError.wrapping("opening the SQLite database", detail: SQLiteStatements.detail) {
            try await pool.prepare()
        }
    }

    /// Closes idle connections now and leased ones when they return; later calls fail.
    public func close() async {
        await pool.close()
    }

    // MARK: Challenges

    /// Stores a new challenge: one `INSERT … ON CONFLICT (id) DO NOTHING RETURNING`.
    public func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        guard challenge.consumedAt == nil else {
            throw StoreError(.invalidInput, "a new challenge cannot be consumed already")
        }
        let binds: [SQLiteData] = [
            .bytes(challenge.id.bytes), .bytes(challenge.bytes), .text(challenge.purpose.rawValue),
            .bytes(challenge.keyID?.bytes), .int64(try StoreTime.milliseconds(challenge.createdAt, "createdAt")),
            .int64(try StoreTime.milliseconds(challenge.expiresAt, "expiresAt")),
        ]
        let rows = try await write("issuing a challenge") { connection in
            try await connection.query(
                """
                INSERT INTO challenges (id, challenge, purpose, key_id, created_at_ms, expires_at_ms)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING RETURNING id
                """, binds)
        }
        guard !rows.isEmpty else {
            throw StoreError(.invalidInput, "the challenge identifier is already in use")
        }
    }

    /// Consumes a challenge once: one `UPDATE … WHERE consumed_at_ms IS NULL AND expires_at_ms > now RETURNING`, then
    /// a read only to name a refusal.
    public func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        let instant = try StoreTime.milliseconds(now, "now")
        let rows = try await write("consuming a challenge") { connection in
            try await connection.query(
                """
                UPDATE challenges SET consumed_at_ms = ?1
                WHERE id = ?2 AND consumed_at_ms IS NULL AND expires_at_ms > ?1
                RETURNING \(StoreColumns.challenge)
                """, [.int64(instant), .bytes(id.bytes)])
        }
        guard let row = rows.first else {
            let existing = try await read("reading a challenge") { connection in
                try await connection.query(
                    "SELECT \(StoreColumns.challenge) FROM challenges WHERE id = ?", [.bytes(id.bytes)])
            }.first
            throw StoredChallenge.refusal(
                for: try existing.map { row throws(StoreError) in
                    try SQLiteStoreRow(row: row).challenge()
                }, now: StoreTime.date(instant))
        }
        let consumed = try SQLiteStoreRow(row: row).challenge()
        try consumed.checkUse(purpose: purpose, keyID: keyID)
        return consumed
    }

    /// Deletes the challenges expired at `now` in one statement and returns how many.
    public func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int {
        let instant = try StoreTime.milliseconds(now, "now")
        return try await write("deleting expired challenges") { connection in
            _ = try await connection.query("DELETE FROM challenges WHERE expires_at_ms <= ?", [.int64(instant)])
            return try await SQLiteStatements.changes(connection)
        }
    }

    // MARK: Keys

    /// Registers a key if absent: one `INSERT … ON CONFLICT (key_id) DO NOTHING RETURNING`.
    public func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        let binds: [SQLiteData] = [
            .bytes(registration.keyID.bytes), .bytes(registration.publicKeyX963),
            .text(registration.appID.description), .text(registration.environment.rawValue),
            .bytes(registration.receipt),
            .int64(try StoreTime.milliseconds(ifPresent: registration.receiptCreatedAt, "receiptCreatedAt")),
            .int64(try StoreTime.milliseconds(ifPresent: registration.receiptRefreshAt, "receiptRefreshAt")),
            .text(registration.osVersion), .text(registration.bundleVersion),
            .int64(registration.validationCategory.map { Int64($0) }), .int64(try StoreTime.milliseconds(now, "now")),
        ]
        let rows = try await write("registering a key") { connection in
            try await connection.query(
                """
                INSERT INTO keys (key_id, public_key, app_id, environment, counter, receipt, receipt_created_at_ms,
                    receipt_refresh_at_ms, os_version, bundle_version, validation_category, created_at_ms)
                VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key_id) DO NOTHING
                RETURNING \(StoreColumns.key)
                """, binds)
        }
        guard let row = rows.first else {
            throw StoreError(.keyExists, "a key with this identifier is already registered")
        }
        return try SQLiteStoreRow(row: row).keyRecord()
    }

    /// The key with this identifier, or `nil`.
    public func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        let rows = try await read("reading a key") { connection in
            try await connection.query(
                "SELECT \(StoreColumns.key) FROM keys WHERE key_id = ?", [.bytes(keyID.bytes)])
        }
        return try rows.first.map { row throws(StoreError) in try SQLiteStoreRow(row: row).keyRecord() }
    }

    /// Advances a counter: one `UPDATE … WHERE counter < new AND revoked_at_ms IS NULL`, then a read only to name a
    /// refusal.
    public func advanceCounter(of keyID: KeyID, to counter: UInt32, now: Date) async throws(StoreError) {
        let instant = try StoreTime.milliseconds(now, "now")
        let rows = try await write("advancing a counter") { connection in
            try await connection.query(
                """
                UPDATE keys SET counter = ?1, last_assertion_at_ms = ?2
                WHERE key_id = ?3 AND counter < ?1 AND revoked_at_ms IS NULL
                RETURNING key_id
                """, [.int64(Int64(counter)), .int64(instant), .bytes(keyID.bytes)])
        }
        guard !rows.isEmpty else {
            throw KeyRecord.counterRefusal(for: try await key(keyID))
        }
    }

    /// Stores a newer receipt and appends its risk metric, in one transaction.
    public func storeReceipt(
        _ update: ReceiptUpdate, for keyID: KeyID, now: Date
    ) async throws(StoreError) -> KeyRecord {
        let instant = try StoreTime.milliseconds(now, "now")
        let created = try StoreTime.milliseconds(update.receiptCreatedAt, "receiptCreatedAt")
        let binds: [SQLiteData] = [
            .bytes(update.receipt), .int64(created),
            .int64(try StoreTime.milliseconds(ifPresent: update.receiptRefreshAt, "receiptRefreshAt")),
            .int64(update.riskMetric.map { Int64($0) }), .bytes(keyID.bytes),
        ]
        let rows = try await write("storing a receipt") { connection in
            try await SQLiteStatements.transaction(connection) {
                let rows = try await connection.query(
                    """
                    UPDATE keys SET receipt = ?1, receipt_created_at_ms = ?2, receipt_refresh_at_ms = ?3,
                        risk_metric = COALESCE(?4, risk_metric)
                    WHERE key_id = ?5 AND revoked_at_ms IS NULL
                        AND (receipt_created_at_ms IS NULL OR receipt_created_at_ms < ?2)
                    RETURNING \(StoreColumns.key)
                    """, binds)
                if !rows.isEmpty, let metric = update.riskMetric {
                    _ = try await connection.query(
                        """
                        INSERT INTO risk_metrics (key_id, risk_metric, receipt_created_at_ms, recorded_at_ms)
                        VALUES (?, ?, ?, ?)
                        """, [.bytes(keyID.bytes), .int64(Int64(metric)), .int64(created), .int64(instant)])
                }
                return rows
            }
        }
        guard let row = rows.first else {
            throw KeyRecord.receiptRefusal(for: try await key(keyID))
        }
        return try SQLiteStoreRow(row: row).keyRecord()
    }

    /// Moves a key's next receipt exchange, in one statement.
    public func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError) {
        let instant = try StoreTime.milliseconds(ifPresent: refreshAt, "refreshAt")
        let rows = try await write("postponing a receipt refresh") { connection in
            try await connection.query(
                "UPDATE keys SET receipt_refresh_at_ms = ? WHERE key_id = ? RETURNING key_id",
                [.int64(instant), .bytes(keyID.bytes)])
        }
        guard !rows.isEmpty else { throw StoreError(.keyNotFound, "no key has this identifier") }
    }

    /// A key's risk metrics, newest first.
    public func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry] {
        try StoreLimits.checkLimit(limit)
        let rows = try await read("reading a risk history") { connection in
            try await connection.query(
                "SELECT \(StoreColumns.riskMetric) FROM risk_metrics WHERE key_id = ? ORDER BY seq DESC LIMIT ?",
                [.bytes(keyID.bytes), .int64(Int64(limit))])
        }
        return try rows.map { row throws(StoreError) in try SQLiteStoreRow(row: row).riskMetricEntry() }
    }

    /// Revokes a key in one statement; a revoked key is returned unchanged.
    public func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        let instant = try StoreTime.milliseconds(now, "now")
        let rows = try await write("revoking a key") { connection in
            try await connection.query(
                """
                UPDATE keys SET revoked_at_ms = ? WHERE key_id = ? AND revoked_at_ms IS NULL
                RETURNING \(StoreColumns.key)
                """, [.int64(instant), .bytes(keyID.bytes)])
        }
        if let row = rows.first { return try SQLiteStoreRow(row: row).keyRecord() }
        guard let existing = try await key(keyID) else {
            throw StoreError(.keyNotFound, "no key has this identifier")
        }
        return existing
    }

    /// Active keys with a receipt due for exchange at `now`, earliest first.
    public func keysDueForReceiptRefresh(now: Date, limit: Int) async throws(StoreError) -> [KeyRecord] {
        let instant = try StoreTime.milliseconds(now, "now")
        try StoreLimits.checkLimit(limit)
        let rows = try await read("listing keys due for a receipt refresh") { connection in
            try await connection.query(
                """
                SELECT \(StoreColumns.key) FROM keys
                WHERE revoked_at_ms IS NULL AND receipt IS NOT NULL AND receipt_refresh_at_ms <= ?
                ORDER BY receipt_refresh_at_ms, key_id LIMIT ?
                """, [.int64(instant), .int64(Int64(limit))])
        }
        return try rows.map { row throws(StoreError) in try SQLiteStoreRow(row: row).keyRecord() }
    }

    /// Key counts by environment and state, in one `GROUP BY`.
    public func keyCounts() async throws(StoreError) -> KeyCounts {
        let rows = try await read("counting keys") { connection in
            try await connection.query(
                """
                SELECT environment, CASE WHEN revoked_at_ms IS NULL THEN 0 ELSE 1 END AS revoked, COUNT(*) AS n
                FROM keys GROUP BY 1, 2
                """)
        }
        return try KeyCounts(rows: rows.map { SQLiteStoreRow(row: $0) })
    }

    // MARK: Shared budgets

    /// Takes one request from a budget: one `INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING` on the writer.
    public func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int? {
        let instant = try StoreTime.milliseconds(now, "now")
        let taken = try await write("taking from a budget") { connection in
            try await connection.query(
                RateBudget.takeStatement(table: "rate_budgets", dialect: .sqlite),
                [.text(budget.name), .int64(Int64(budget.perMinute)), .int64(instant)])
        }
        guard taken.isEmpty else { return nil }
        let rows = try await read("reading a budget") { connection in
            try await connection.query(
                RateBudget.readStatement(table: "rate_budgets", dialect: .sqlite), [.text(budget.name)])
        }
        let row = try rows.first.map { row throws(StoreError) in
            let stored = SQLiteStoreRow(row: row)
            return (try stored.requiredInteger("tokens"), try stored.requiredInteger("updated_at_ms"))
        }
        return budget.wait(afterRefusal: row, now: instant)
    }

    // MARK: Testing

    /// Runs one statement on the writer connection and returns the first column of its first row as an integer,
    /// for tests that put the database into the state of a failing disk: `PRAGMA query_only = ON` (writes fail as on
    /// a read-only file), `PRAGMA max_page_count = 1` (the file cannot grow, as on a full disk).
    package func executeOnWriter(_ sql: String) async throws(StoreError) -> Int? {
        try await write("a test statement") { connection in
            try await connection.query(sql).first?.columns.first?.data.integer
        }
    }

    // MARK: Leasing

    private func write<Result: Sendable>(
        _ operation: StaticString, _ body: (SQLiteConnection) async throws -> Result
    ) async throws(StoreError) -> Result {
        try await lease(.writer, operation, body)
    }

    private func read<Result: Sendable>(
        _ operation: StaticString, _ body: (SQLiteConnection) async throws -> Result
    ) async throws(StoreError) -> Result {
        try await lease(.reader, operation, body)
    }

    private func lease<Result: Sendable>(
        _ role: SQLiteConnectionPool.Role, _ operation: StaticString,
        _ body: (SQLiteConnection) async throws -> Result
    ) async throws(StoreError) -> Result {
        try await StoreError.wrapping(operation, detail: SQLiteStatements.detail) {
            let connection = try await pool.acquire(role)
            do {
                let result = try await body(connection)
                await pool.release(connection, role)
                return result
            } catch {
                await pool.release(connection, role)
                throw error
            }
        }
    }
}
