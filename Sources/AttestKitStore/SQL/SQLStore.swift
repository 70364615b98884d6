import AttestKit
import Foundation

/// The operations of ``AttestationStore`` for the SQL backends, written once over an ``SQLExecutor``:
/// ``SQLiteAttestationStore`` and ``PostgresAttestationStore`` get them through ``SQLBackedStore``.
///
/// Arguments are checked before any SQL runs; every statement is parameterised. Each decision is one statement
/// (`UPDATE … WHERE … RETURNING` for a challenge or a counter, `INSERT … ON CONFLICT DO NOTHING RETURNING` for a
/// registration, `INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING` for a budget) or one transaction (a receipt
/// and its risk metric); a read after a refusal only names it. Times are Unix milliseconds.
struct SQLStore<Executor: SQLExecutor>: Sendable {
    /// The driver the statements run on.
    let executor: Executor
    /// The most rows one cleanup statement deletes (``deleteExpired(_:from:key:now:)``).
    let cleanupBatch: Int

    /// The store's operations on `executor`; a cleanup deletes at most `cleanupBatch` rows per statement.
    init(executor: Executor, cleanupBatch: Int = SQLStore.defaultCleanupBatch) {
        self.executor = executor
        self.cleanupBatch = max(cleanupBatch, 1)
    }

    /// The rows one cleanup statement deletes by default: a few milliseconds of work, so that SQLite's writer is
    /// never held long and a PostgreSQL statement stays far within the operation deadline.
    static var defaultCleanupBatch: Int { 1_000 }

    private var dialect: SQLDialect { executor.dialect }

    private func parameter(_ index: Int) -> String { dialect.parameter(index) }

    // MARK: Challenges

    /// Stores a new challenge: one `INSERT … ON CONFLICT (id) DO NOTHING RETURNING`.
    func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        guard challenge.consumedAt == nil else {
            throw StoreError(.invalidInput, "a new challenge cannot be consumed already")
        }
        let binds: [SQLValue] = [
            .bytes(challenge.id.bytes), .bytes(challenge.bytes), .text(challenge.purpose.rawValue),
            .bytes(challenge.keyID?.bytes), .integer(try StoreTime.milliseconds(challenge.createdAt, "createdAt")),
            .integer(try StoreTime.milliseconds(challenge.expiresAt, "expiresAt")), .bytes(challenge.rpIDHash),
        ]
        let values = (1...7).map(parameter).joined(separator: ", ")
        let rows = try await executor.query(
            "issuing a challenge",
            SQLStatement(
                """
                INSERT INTO \(executor.table("challenges"))
                    (id, challenge, purpose, key_id, created_at_ms, expires_at_ms, rp_id_hash)
                VALUES (\(values)) ON CONFLICT (id) DO NOTHING RETURNING id
                """, binds), access: .write)
        guard !rows.isEmpty else {
            throw StoreError(.invalidInput, "the challenge identifier is already in use")
        }
    }

    /// Consumes a challenge once: one `UPDATE … WHERE consumed_at_ms IS NULL AND expires_at_ms > now RETURNING`, then
    /// a read only to name a refusal.
    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        let instant = try StoreTime.milliseconds(now, "now")
        let end = executor.callDeadline()
        let table = executor.table("challenges")
        let rows = try await executor.query(
            "consuming a challenge",
            SQLStatement(
                """
                UPDATE \(table) SET consumed_at_ms = \(parameter(1))
                WHERE id = \(parameter(2)) AND consumed_at_ms IS NULL AND expires_at_ms > \(parameter(1))
                RETURNING \(StoreColumns.challenge)
                """, [.integer(instant), .bytes(id.bytes)]), access: .write, by: end)
        guard let row = rows.first else {
            let existing = try await executor.query(
                "reading a challenge",
                SQLStatement(
                    "SELECT \(StoreColumns.challenge) FROM \(table) WHERE id = \(parameter(1))", [.bytes(id.bytes)]),
                access: .read, by: end
            ).first
            throw StoredChallenge.refusal(
                for: try existing.map { row throws(StoreError) in try row.challenge() }, now: StoreTime.date(instant))
        }
        let consumed = try row.challenge()
        try consumed.checkUse(purpose: purpose, keyID: keyID)
        return consumed
    }

    /// Undoes the consumption `challenge` records, in one statement that finds it by its id and consumption time.
    func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        guard let consumedAt = challenge.consumedAt else { return }
        let instant = try StoreTime.milliseconds(consumedAt, "consumedAt")
        _ = try await executor.changes(
            "releasing a challenge",
            SQLStatement(
                """
                UPDATE \(executor.table("challenges")) SET consumed_at_ms = NULL
                WHERE id = \(parameter(1)) AND consumed_at_ms = \(parameter(2))
                """, [.bytes(challenge.id.bytes), .integer(instant)]))
    }

    /// Deletes the challenges expired at `now`, in batches (``deleteExpired(_:from:key:now:)``), and returns how
    /// many.
    func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int {
        try await deleteExpired("deleting expired challenges", from: "challenges", key: "id", now: now)
    }

    /// Deletes the rows of `table` (primary key `key`, an `expires_at_ms` index) expired at `now` and returns how
    /// many: statements of at most ``cleanupBatch`` rows each, until one deletes fewer, each with a deadline of its
    /// own, and stopping between two when the task is cancelled. One statement for a whole backlog (a cleanup that was off for a day, a flood of challenges) would hold
    /// SQLite's only writer, and every counter advance behind it, for as long as it ran, and on PostgreSQL it would
    /// outlast the operation deadline, roll back and never make progress, while the table kept growing.
    /// - Throws: What a statement throws; the batches deleted before it stay deleted.
    private func deleteExpired(
        _ operation: StaticString, from table: String, key: String, now: Date
    ) async throws(StoreError) -> Int {
        let instant = try StoreTime.milliseconds(now, "now")
        let name = executor.table(table)
        let statement = SQLStatement(
            """
            DELETE FROM \(name) WHERE \(key) IN (
                SELECT \(key) FROM \(name) WHERE expires_at_ms <= \(parameter(1)) LIMIT \(parameter(2)))
            """, [.integer(instant), .integer(Int64(cleanupBatch))])
        var deleted = 0
        while true {
            let batch = try await executor.changes(operation, statement)
            deleted += batch
            // A shutdown stops between batches; the rest is the next round's.
            if batch < cleanupBatch || Task.isCancelled { return deleted }
        }
    }

    // MARK: Keys

    /// Registers a key if absent: one `INSERT … ON CONFLICT (key_id) DO NOTHING RETURNING`.
    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        let binds: [SQLValue] = [
            .bytes(registration.keyID.bytes), .bytes(registration.publicKeyX963),
            .text(registration.appID.description), .text(registration.environment.rawValue),
            .bytes(registration.receipt),
            .integer(try StoreTime.milliseconds(ifPresent: registration.receiptCreatedAt, "receiptCreatedAt")),
            .integer(try StoreTime.milliseconds(ifPresent: registration.receiptRefreshAt, "receiptRefreshAt")),
            .text(registration.osVersion), .text(registration.bundleVersion),
            .integer(registration.validationCategory.map { Int64($0) }),
            .integer(try StoreTime.milliseconds(now, "now")), .bytes(registration.appKey?.der),
            .integer(try StoreTime.milliseconds(ifPresent: registration.receiptExpiresAt, "receiptExpiresAt")),
            .bytes(registration.keyAccessControl),
        ]
        let values = (1...4).map(parameter) + ["0"] + (5...14).map(parameter)
        let rows = try await executor.query(
            "registering a key",
            SQLStatement(
                """
                INSERT INTO \(executor.table("keys")) (key_id, public_key, app_id, environment, counter, receipt,
                    receipt_created_at_ms, receipt_refresh_at_ms, os_version, bundle_version, validation_category,
                    created_at_ms, app_key, receipt_expires_at_ms, key_access_control)
                VALUES (\(values.joined(separator: ", "))) ON CONFLICT (key_id) DO NOTHING
                RETURNING \(StoreColumns.key)
                """, binds), access: .write)
        guard let row = rows.first else {
            throw StoreError(.keyExists, "a key with this identifier is already registered")
        }
        return try row.keyRecord()
    }

    /// The key with this identifier (without its receipt's bytes unless `receipt`), or `nil`; by `end` for the
    /// read that names a refusal.
    func key(
        _ keyID: KeyID, receipt: Bool = true, by end: ContinuousClock.Instant? = nil
    ) async throws(StoreError) -> KeyRecord? {
        let columns = receipt ? StoreColumns.key : StoreColumns.keyWithoutReceipt(dialect)
        let rows: [Executor.Row]
        if receipt {
            let statement = SQLStatement(
                "SELECT \(columns) FROM \(executor.table("keys")) WHERE key_id = \(parameter(1))",
                [.bytes(keyID.bytes)])
            rows = try await executor.query("reading a key", statement, access: .read, by: end)
        } else {
            // The request path's read: concurrent ones are answered together.
            let row: [SQLValue] = [.bytes(keyID.bytes)]
            rows = try await executor.combinableRead(
                "reading a key", readingKeys([row]),
                SQLCombinableWrite(
                    kind: "read-key", target: keyID.bytes, row: row,
                    combine: { [self] rows in readingKeys(rows) }),
                by: end ?? executor.callDeadline())
        }
        return try rows.first.map { row throws(StoreError) in try row.keyRecord() }
    }

    /// The keys of several distinct identifiers (one value per row), without their receipts' bytes, in one
    /// `SELECT … WHERE key_id IN (…)` over the primary key (PostgreSQL: `= ANY` of one array, prepared).
    func readingKeys(_ rows: [[SQLValue]]) -> SQLStatement {
        if dialect == .postgres {
            let prepared = SQLPreparedStatement.readKeys
            return SQLStatement(
                prepared.postgresText(keys: executor.table("keys")), [.byteStrings(Self.byteColumn(rows, 0))],
                prepared: prepared)
        }
        let parameters = (1...max(1, rows.count)).map(parameter).joined(separator: ", ")
        return SQLStatement(
            """
            SELECT \(StoreColumns.keyWithoutReceipt(dialect)) FROM \(executor.table("keys"))
            WHERE key_id IN (\(parameters))
            """, rows.flatMap { $0 })
    }

    /// Advances a counter: one `UPDATE … WHERE counter < new AND revoked_at_ms IS NULL AND
    /// COALESCE(last_assertion_at_ms, created_at_ms) >= usedSince RETURNING` the key, then a read only to name a
    /// refusal. Concurrent advances of different keys may be applied by one statement (``advancingCounters(_:)``),
    /// with the same condition per row.
    func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord {
        let end = executor.callDeadline()
        let instant = try StoreTime.milliseconds(now, "now")
        // Without expiry every last use qualifies: times are never negative.
        let since = try StoreTime.milliseconds(ifPresent: usedSince, "usedSince") ?? 0
        let row: [SQLValue] = [.bytes(keyID.bytes), .integer(Int64(counter)), .integer(instant), .integer(since)]
        let rows = try await executor.combinableWrite(
            "advancing a counter", advancingCounters([row]),
            SQLCombinableWrite(
                kind: "advance-counter", target: keyID.bytes, row: row,
                combine: { [self] rows in advancingCounters(rows) }),
            by: end)
        guard let advanced = rows.first else {
            let existing = try await key(keyID, receipt: false, by: end)
            throw KeyRecord.counterRefusal(for: existing, usedSince: usedSince.map { _ in StoreTime.date(since) })
        }
        return try advanced.keyRecord()
    }

    /// The compare-and-set of counter advances, one row of four values per key (`key_id`, new counter, time and
    /// oldest last use in milliseconds): each key whose stored counter is lower, which is not revoked and was last
    /// used at or after the oldest last use takes its new counter; the keys changed are returned whole but for the
    /// receipt's bytes. The keys must be distinct.
    func advancingCounters(_ rows: [[SQLValue]]) -> SQLStatement {
        if dialect == .postgres {
            let prepared = SQLPreparedStatement.advanceCounters
            return SQLStatement(
                prepared.postgresText(keys: executor.table("keys")),
                [
                    .byteStrings(Self.byteColumn(rows, 0)), .integers(Self.integerColumn(rows, 1)),
                    .integers(Self.integerColumn(rows, 2)), .integers(Self.integerColumn(rows, 3)),
                ],
                prepared: prepared)
        }
        return SQLStatement(
            CounterAdvanceText.text(rows: rows.count, table: executor.table("keys"), dialect: dialect),
            rows.flatMap { $0 })
    }

    /// The byte strings at `index` of each row, one array parameter (a value of another kind, never written by the
    /// store, reads as empty).
    private static func byteColumn(_ rows: [[SQLValue]], _ index: Int) -> [[UInt8]] {
        rows.map { row in
            guard index < row.count, case .bytes(let bytes?) = row[index] else { return [] }
            return bytes
        }
    }

    /// The integers at `index` of each row, one array parameter (a value of another kind, never written by the
    /// store, reads as 0).
    private static func integerColumn(_ rows: [[SQLValue]], _ index: Int) -> [Int64] {
        rows.map { row in
            guard index < row.count, case .integer(let value?) = row[index] else { return 0 }
            return value
        }
    }

    /// Stores a newer receipt and appends its risk metric, in one transaction.
    func storeReceipt(_ update: ReceiptUpdate, for keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        let instant = try StoreTime.milliseconds(now, "now")
        let created = try StoreTime.milliseconds(update.receiptCreatedAt, "receiptCreatedAt")
        let p = parameter
        let store = SQLStatement(
            """
            UPDATE \(executor.table("keys")) SET receipt = \(p(1)), receipt_created_at_ms = \(p(2)),
                receipt_refresh_at_ms = \(p(3)), risk_metric = COALESCE(\(p(4)), risk_metric),
                receipt_expires_at_ms = \(p(6))
            WHERE key_id = \(p(5)) AND revoked_at_ms IS NULL
                AND (receipt_created_at_ms IS NULL OR receipt_created_at_ms < \(p(2)))
            RETURNING \(StoreColumns.key)
            """,
            [
                .bytes(update.receipt), .integer(created),
                .integer(try StoreTime.milliseconds(ifPresent: update.receiptRefreshAt, "receiptRefreshAt")),
                .integer(update.riskMetric.map { Int64($0) }), .bytes(keyID.bytes),
                .integer(try StoreTime.milliseconds(ifPresent: update.receiptExpiresAt, "receiptExpiresAt")),
            ])
        let history = update.riskMetric.map { metric in
            SQLStatement(
                """
                INSERT INTO \(executor.table("risk_metrics")) (key_id, risk_metric, receipt_created_at_ms,
                    recorded_at_ms)
                VALUES (\(p(1)), \(p(2)), \(p(3)), \(p(4)))
                """, [.bytes(keyID.bytes), .integer(Int64(metric)), .integer(created), .integer(instant)])
        }
        let end = executor.callDeadline()
        let rows = try await executor.transaction("storing a receipt", by: end) { run in
            let rows = try await run(store)
            if !rows.isEmpty, let history {
                _ = try await run(history)
            }
            return rows
        }
        guard let row = rows.first else {
            throw KeyRecord.receiptRefusal(for: try await key(keyID, by: end))
        }
        return try row.keyRecord()
    }

    /// Moves a key's next receipt exchange, in one statement.
    func postponeReceiptRefresh(of keyID: KeyID, until refreshAt: Date?) async throws(StoreError) {
        let instant = try StoreTime.milliseconds(ifPresent: refreshAt, "refreshAt")
        let rows = try await executor.query(
            "postponing a receipt refresh",
            SQLStatement(
                """
                UPDATE \(executor.table("keys")) SET receipt_refresh_at_ms = \(parameter(1))
                WHERE key_id = \(parameter(2)) RETURNING key_id
                """, [.integer(instant), .bytes(keyID.bytes)]), access: .write)
        guard !rows.isEmpty else { throw StoreError(.keyNotFound, "no key has this identifier") }
    }

    /// A key's risk metrics, newest first.
    func riskHistory(of keyID: KeyID, limit: Int) async throws(StoreError) -> [RiskMetricEntry] {
        try StoreLimits.checkLimit(limit)
        let rows = try await executor.query(
            "reading a risk history",
            SQLStatement(
                """
                SELECT \(StoreColumns.riskMetric) FROM \(executor.table("risk_metrics"))
                WHERE key_id = \(parameter(1)) ORDER BY seq DESC LIMIT \(parameter(2))
                """, [.bytes(keyID.bytes), .integer(Int64(limit))]), access: .read)
        return try rows.map { row throws(StoreError) in try row.riskMetricEntry() }
    }

    /// Revokes a key in one statement; a revoked key is returned unchanged.
    func revokeKey(_ keyID: KeyID, now: Date) async throws(StoreError) -> KeyRecord {
        let end = executor.callDeadline()
        let instant = try StoreTime.milliseconds(now, "now")
        let rows = try await executor.query(
            "revoking a key",
            SQLStatement(
                """
                UPDATE \(executor.table("keys")) SET revoked_at_ms = \(parameter(1))
                WHERE key_id = \(parameter(2)) AND revoked_at_ms IS NULL
                RETURNING \(StoreColumns.key)
                """, [.integer(instant), .bytes(keyID.bytes)]), access: .write, by: end)
        if let row = rows.first { return try row.keyRecord() }
        guard let existing = try await key(keyID, by: end) else {
            throw StoreError(.keyNotFound, "no key has this identifier")
        }
        return existing
    }

    /// Claims the due keys in one `UPDATE … WHERE key_id IN (SELECT … LIMIT n [FOR UPDATE SKIP LOCKED]) RETURNING`,
    /// on the partial index `keys_receipt_refresh`: the refresh time of a key to trade becomes the lease's end, so no
    /// other claimer sees the key as due until it passes; the same statement parks the due keys not to trade (a
    /// receipt expired at `now`: never again; last used before `activeSince`: after ``StoreLimits/idleRefreshPause``),
    /// which are not returned but counted (``ReceiptRefreshClaim/parked``).
    func claimReceiptRefresh(
        now: Date, limit: Int, lease: Duration, activeSince: Date
    ) async throws(StoreError) -> ReceiptRefreshClaim {
        let instant = try StoreTime.milliseconds(now, "now")
        let since = try StoreTime.milliseconds(activeSince, "activeSince")
        try StoreLimits.checkLimit(limit)
        let until = try StoreLimits.leaseEnd(instant, lease)
        let parked = try StoreLimits.leaseEnd(instant, StoreLimits.idleRefreshPause)
        let keys = executor.table("keys")
        let p = parameter
        let rows = try await executor.query(
            "claiming keys due for a receipt refresh",
            SQLStatement(
                """
                UPDATE \(keys) SET receipt_refresh_at_ms = CASE
                    WHEN receipt_expires_at_ms IS NOT NULL AND receipt_expires_at_ms <= \(p(2)) THEN NULL
                    WHEN COALESCE(last_assertion_at_ms, created_at_ms) < \(p(4)) THEN \(p(5))
                    ELSE \(p(1)) END
                WHERE key_id IN (
                    SELECT key_id FROM \(keys)
                    WHERE revoked_at_ms IS NULL AND receipt IS NOT NULL AND receipt_refresh_at_ms <= \(p(2))
                    ORDER BY receipt_refresh_at_ms, key_id LIMIT \(p(3))\(dialect.skipLocked))
                RETURNING \(StoreColumns.key)
                """,
                [.integer(until), .integer(instant), .integer(Int64(limit)), .integer(since), .integer(parked)]),
            access: .write)
        let (time, oldest) = (StoreTime.date(instant), StoreTime.date(since))
        let claimed = try rows.map { row throws(StoreError) in try row.keyRecord() }.filter { record in
            record.refreshClaim(now: time, activeSince: oldest) == .claim
        }
        return ReceiptRefreshClaim(keys: KeyRecord.claimOrder(claimed), parked: rows.count - claimed.count)
    }

    /// Deletes a key in one statement; its risk history goes with it (`ON DELETE CASCADE`), and the key counts'
    /// trigger counts it out in the same transaction.
    func deleteKey(_ keyID: KeyID) async throws(StoreError) {
        let rows = try await executor.query(
            "deleting a key",
            SQLStatement(
                "DELETE FROM \(executor.table("keys")) WHERE key_id = \(parameter(1)) RETURNING key_id",
                [.bytes(keyID.bytes)]), access: .write)
        guard !rows.isEmpty else { throw StoreError(.keyNotFound, "no key has this identifier") }
    }

    /// The due keys and the earliest due time: two scalar subqueries over the partial index `keys_receipt_refresh`
    /// (the claim's own condition), one counting at most `cap` entries, one reading the first.
    func receiptRefreshBacklog(now: Date, countingUpTo cap: Int) async throws(StoreError) -> ReceiptRefreshBacklog {
        let instant = try StoreTime.milliseconds(now, "now")
        try ReceiptRefreshBacklog.checkCap(cap)
        let keys = executor.table("keys")
        let due = "revoked_at_ms IS NULL AND receipt IS NOT NULL AND receipt_refresh_at_ms <= \(parameter(1))"
        let rows = try await executor.query(
            "measuring the receipt refresh backlog",
            SQLStatement(
                """
                SELECT
                    (SELECT COUNT(*) FROM (SELECT 1 AS one FROM \(keys) WHERE \(due) LIMIT \(parameter(2))) AS d) AS due,
                    (SELECT receipt_refresh_at_ms FROM \(keys) WHERE \(due)
                        ORDER BY receipt_refresh_at_ms LIMIT 1) AS oldest
                """, [.integer(instant), .integer(Int64(cap))]), access: .read)
        let row = try rows.first.map { row throws(StoreError) in
            (try row.requiredInteger("due"), try row.integer("oldest"))
        }
        return ReceiptRefreshBacklog(due: Int(row?.0 ?? 0), oldestDue: StoreTime.date(ifPresent: row?.1))
    }

    /// One round trip of constant cost: `SELECT 1`, reading no table.
    func ping() async throws(StoreError) {
        _ = try await executor.query("checking the store", SQLStatement("SELECT 1 AS one"), access: .read)
    }

    /// The database's clock, in the one round trip of ``ping()`` (reading no table): `nil`, after a ping, for a
    /// dialect whose clock is this process's (``SQLDialect/clockQuery``).
    func databaseTime() async throws(StoreError) -> Date? {
        guard let clockQuery = executor.dialect.clockQuery else {
            try await ping()
            return nil
        }
        let rows = try await executor.query("reading the database's clock", SQLStatement(clockQuery), access: .read)
        guard let milliseconds = try rows.first?.integer("now_ms") else {
            throw StoreError(.storageUnavailable, "the database did not tell its time")
        }
        return StoreTime.date(milliseconds)
    }

    /// Key counts by environment and state: the four rows of `key_counts`, which triggers keep in step with every
    /// registration, revocation and deletion in the same transaction, so the read does not grow with the table.
    func keyCounts() async throws(StoreError) -> KeyCounts {
        let rows = try await executor.query(
            "counting keys",
            SQLStatement(
                """
                SELECT environment, CAST(CASE WHEN state = 'active' THEN 0 ELSE 1 END AS BIGINT) AS revoked,
                    count AS n
                FROM \(executor.table("key_counts"))
                """), access: .read)
        return try KeyCounts(rows: rows)
    }

    // MARK: Shared budgets

    /// Takes one request from a budget: one `INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING` under the row's
    /// lock (SQLite: on the writer), so callers racing on the last request cannot both get it.
    func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int? {
        let instant = try StoreTime.milliseconds(now, "now")
        let table = executor.table("rate_budgets")
        let taken = try await executor.query(
            "taking from a budget",
            SQLStatement(
                RateBudget.takeStatement(table: table, dialect: dialect),
                [
                    .text(budget.name), .integer(Int64(budget.burst)), .integer(instant),
                    .integer(Int64(budget.refill)), .integer(budget.period.milliseconds),
                ]), access: .write)
        guard taken.isEmpty else { return nil }
        let rows = try await executor.query(
            "reading a budget",
            SQLStatement(RateBudget.readStatement(table: table, dialect: dialect), [.text(budget.name)]),
            access: .read)
        let row = try rows.first.map { row throws(StoreError) in
            (try row.requiredInteger("tokens"), try row.requiredInteger("updated_at_ms"))
        }
        return budget.wait(afterRefusal: row, now: instant)
    }

    // MARK: Limited-use tokens

    /// Records a token as used once: one `INSERT … ON CONFLICT (token_id) DO NOTHING RETURNING`.
    func consumeToken(_ tokenID: String, expiresAt: Date, now: Date) async throws(StoreError) -> Bool {
        try StoreLimits.checkTokenID(tokenID)
        _ = try StoreTime.milliseconds(now, "now")
        let rows = try await executor.query(
            "consuming a token",
            SQLStatement(
                """
                INSERT INTO \(executor.table("consumed_tokens")) (token_id, expires_at_ms)
                VALUES (\(parameter(1)), \(parameter(2))) ON CONFLICT (token_id) DO NOTHING RETURNING token_id
                """, [.text(tokenID), .integer(try StoreTime.milliseconds(expiresAt, "expiresAt"))]), access: .write)
        return !rows.isEmpty
    }

    /// Whether a token was consumed: its record, read by the primary key.
    func isTokenConsumed(_ tokenID: String) async throws(StoreError) -> Bool {
        try StoreLimits.checkTokenID(tokenID)
        let rows = try await executor.query(
            "reading a consumed token",
            SQLStatement(
                "SELECT token_id FROM \(executor.table("consumed_tokens")) WHERE token_id = \(parameter(1))",
                [.text(tokenID)]), access: .read)
        return !rows.isEmpty
    }

    /// Deletes the records of tokens expired at `now`, in batches (``deleteExpired(_:from:key:now:)``), and
    /// returns how many.
    func deleteExpiredTokens(now: Date) async throws(StoreError) -> Int {
        try await deleteExpired("deleting expired tokens", from: "consumed_tokens", key: "token_id", now: now)
    }
}
