import AttestKit
import AttestKitTestSupport
import Crypto
import Foundation
import Testing

@testable import AttestKitStore

/// Every statement of the request path (and the cleanup's) reads the tables that grow with installs through an
/// index: PostgreSQL's own plan, on tables seeded large enough, after `ANALYZE`, says so.
///
/// The statements are the store's own: the store runs on a ``RecordingExecutor``, the test drives each operation
/// once, then asks `EXPLAIN (FORMAT JSON)` for the plan of every recorded statement with its recorded binds. No
/// planner setting is changed: the plan is the one the database would choose.
@Suite("Query plans")
struct QueryPlanTests {
    /// The tables whose rows grow with installs, traffic or time; a sequential scan of one is a cost that grows.
    static let growing: Set<String> = [
        "keys", "challenges", "risk_metrics", "consumed_tokens", "dashboard_sessions", "rate_budgets",
    ]
    /// The scans allowed, by operation and table: opening a dashboard session trims the table to its capacity
    /// (at most ``StoreLimits/maximumDashboardSessions`` rows, which it keeps so), keeping the newest, so it reads
    /// every row whatever the plan; on a table that small the planner rightly prefers a sequential scan and a sort.
    static let bounded: Set<String> = ["opening a dashboard session: dashboard_sessions"]
    /// Rows seeded in each growing table (dashboard sessions: as many as a store keeps).
    static let rows = 20_000

    @Test(
        "no statement of the request path or the cleanup scans a growing table",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func everyStatementUsesAnIndex() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        try await StoreBackend.postgres.withStore { store in
            let store = try #require(store as? PostgresAttestationStore)
            try await Self.seed(store)
            let recording = RecordingExecutor(base: store.executor)
            let sql = SQLStore(executor: recording)
            try await Self.drive(sql, seeded: store)
            var plans = recording.recorded.map { ($0.operation, $0.statement) }
            // The combined counter advance of several keys, as the group commit builds it.
            let keys = (0..<4).map { Self.seededKeyID($0) }
            let rows: [[SQLValue]] = keys.map { [.bytes($0), .integer(5), .integer(Self.milliseconds), .integer(0)] }
            plans.append(("advancing four counters at once", sql.advancingCounters(rows)))
            // The combined key read of several cache misses, as the read batches build it.
            plans.append(("reading four keys at once", sql.readingKeys(keys.map { [.bytes($0)] })))
            let operations = Set(plans.map(\.0))
            for expected in Self.operations {
                #expect(operations.contains(expected), "no statement recorded for \(expected)")
            }
            for (operation, statement) in plans {
                let scanned = try await Self.sequentialScans(of: statement, on: store)
                    .filter { !Self.bounded.contains("\(operation): \($0)") }
                #expect(
                    scanned.isEmpty,
                    "\(operation) scans \(scanned.sorted().joined(separator: ", ")): \(statement.sql)")
            }
        }
    }

    @Test(
        "keys leaves room on its pages: a counter advance of a key loaded in bulk is a HOT update (no index entry)",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func counterAdvancesStayOnTheirPage() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        try await StoreBackend.postgres.withStore { store in
            let store = try #require(store as? PostgresAttestationStore)
            try await Self.seed(store)
            let schema = store.executor.schema
            let options = try await store.executor.query(
                "reading the table's options",
                SQLStatement(
                    "SELECT array_to_string(reloptions, ',') AS options FROM pg_class WHERE oid = '\(schema.quoted).keys'::regclass"
                ), access: .read)
            #expect(try options.first?.text("options") == "fillfactor=85")
            // Four keys far apart in the bulk load, advanced by the combined statement, in one transaction whose own
            // statistics say how each row was updated.
            let sql = SQLStore(executor: store.executor)
            let keys = [101, 5_003, 12_345, 19_999].map { Self.seededKeyID(Int32($0)) }
            let advance = sql.advancingCounters(
                keys.map { [.bytes($0), .integer(9), .integer(Self.milliseconds), .integer(0)] })
            let statistics = SQLStatement(
                """
                SELECT n_tup_upd AS updated, n_tup_hot_upd AS hot FROM pg_stat_xact_user_tables
                WHERE relid = '\(schema.quoted).keys'::regclass
                """)
            let (advanced, counts) = try await store.executor.transaction("advancing seeded keys", by: nil) { run in
                let advanced = try await run(advance).count
                return (advanced, try await run(statistics).first)
            }
            #expect(advanced == keys.count)
            #expect(try counts?.integer("updated") == Int64(keys.count))
            #expect(try counts?.integer("hot") == Int64(keys.count))
        }
    }

    /// The operations whose statements the test must have seen.
    static let operations = [
        "issuing a challenge", "consuming a challenge", "reading a challenge", "deleting expired challenges",
        "registering a key", "reading a key", "reading four keys at once", "advancing a counter",
        "advancing four counters at once",
        "storing a receipt", "postponing a receipt refresh", "reading a risk history", "revoking a key",
        "claiming keys due for a receipt refresh", "checking the store", "counting keys", "taking from a budget",
        "reading a budget", "consuming a token", "deleting expired tokens", "opening a dashboard session",
        "reading a dashboard session", "closing a dashboard session", "deleting expired dashboard sessions",
        "taking a job lease", "deleting a key", "measuring the receipt refresh backlog",
    ]

    static let now = TestKeys.t0
    static let milliseconds: Int64 = 1_800_000_000_000

    /// The identifier of seeded key `index` (as the seeding computes it: SHA-256 of the index as 4 bytes).
    static func seededKeyID(_ index: Int32) -> [UInt8] {
        Array(SHA256.hash(data: withUnsafeBytes(of: index.bigEndian) { Array($0) }))
    }

    /// Seeds every growing table with rows shaped like real ones (live challenges and sessions, keys with
    /// receipts due later, budgets, token records, risk metrics), then `ANALYZE`s it.
    static func seed(_ store: PostgresAttestationStore) async throws {
        let schema = store.executor.schema
        let (n, t) = (rows, milliseconds)
        let statements = [
            """
            INSERT INTO \(schema.table("keys")) (key_id, public_key, app_id, environment, counter, receipt,
                receipt_created_at_ms, receipt_refresh_at_ms, created_at_ms)
            SELECT sha256(int4send(i)), '\\x04'::bytea || sha256(int4send(i)) || sha256(int4send(-i)),
                'ABCDE12345.com.example.app', 'production', 1, '\\xa5a5'::bytea, \(t) - 60000,
                \(t) + 86400000 + i, \(t) - i
            FROM generate_series(0, \(n - 1)) AS i
            """,
            """
            INSERT INTO \(schema.table("risk_metrics")) (key_id, risk_metric, receipt_created_at_ms, recorded_at_ms)
            SELECT sha256(int4send(i)), 1, \(t), \(t) FROM generate_series(0, \(n - 1)) AS i
            """,
            """
            INSERT INTO \(schema.table("challenges")) (id, challenge, purpose, created_at_ms, expires_at_ms)
            SELECT substring(sha256(int4send(i)) FROM 1 FOR 16), sha256(int4send(-i)), 'assert', \(t),
                \(t) + 300000 + i
            FROM generate_series(0, \(n - 1)) AS i
            """,
            """
            INSERT INTO \(schema.table("consumed_tokens")) (token_id, expires_at_ms)
            SELECT 'token-' || i, \(t) + 3600000 + i FROM generate_series(0, \(n - 1)) AS i
            """,
            """
            INSERT INTO \(schema.table("rate_budgets")) (name, tokens, updated_at_ms)
            SELECT 'budget-' || i, 1000, \(t) FROM generate_series(0, \(n - 1)) AS i
            """,
            """
            INSERT INTO \(schema.table("dashboard_sessions")) (digest, created_at_ms, expires_at_ms)
            SELECT sha256(int4send(i)), \(t) - 1000 - i, \(t) + 3600000 + i
            FROM generate_series(0, \(StoreLimits.maximumDashboardSessions - 2)) AS i
            """,
            "ANALYZE \(schema.quoted).keys, \(schema.quoted).risk_metrics, \(schema.quoted).challenges",
            "ANALYZE \(schema.quoted).consumed_tokens, \(schema.quoted).rate_budgets",
            "ANALYZE \(schema.quoted).dashboard_sessions, \(schema.quoted).key_counts",
        ]
        for statement in statements { try await store.execute(statement) }
    }

    /// Runs every operation of the request path once, and the cleanup's, each along the path that runs all its
    /// statements (a refusal's follow-up read included).
    static func drive(_ sql: SQLStore<RecordingExecutor<PostgresExecutor>>, seeded store: PostgresAttestationStore)
        async throws
    {
        try await sql.ping()
        var generator = SystemRandomNumberGenerator()
        let challenge = try StoredChallenge.random(purpose: .attest, ttl: .seconds(300), now: now, using: &generator)
        try await sql.insertChallenge(challenge)
        let consumed = try await sql.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: now)
        try await sql.releaseChallenge(consumed)
        _ = try await sql.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: now)
        await #expect(throws: StoreError.self) {
            _ = try await sql.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: now)
        }
        _ = try await sql.deleteExpiredChallenges(now: now)

        let registration = try TestKeys.registration(receiptRefreshAt: now.addingTimeInterval(-1))
        _ = try await sql.registerKey(registration, now: now)
        _ = try await sql.key(registration.keyID)
        let usedSince = now.addingTimeInterval(-86_400)
        _ = try await sql.advanceCounter(of: registration.keyID, to: 3, now: now, usedSince: usedSince)
        await #expect(throws: StoreError.self) {
            _ = try await sql.advanceCounter(of: registration.keyID, to: 2, now: now, usedSince: usedSince)
        }
        _ = try await sql.storeReceipt(try TestKeys.receipt(at: 10, riskMetric: 4), for: registration.keyID, now: now)
        try await sql.postponeReceiptRefresh(of: registration.keyID, until: now.addingTimeInterval(-1))
        _ = try await sql.riskHistory(of: registration.keyID, limit: 10)
        _ = try await sql.claimReceiptRefresh(
            now: now, limit: 16, lease: .seconds(60), activeSince: now.addingTimeInterval(-30 * 86_400))
        _ = try await sql.receiptRefreshBacklog(now: now, countingUpTo: 100_000)
        _ = try await sql.revokeKey(registration.keyID, now: now)
        _ = try await sql.revokeKey(registration.keyID, now: now)
        _ = try await sql.keyCounts()
        let deleted = try TestKeys.registration(receiptRefreshAt: nil)
        _ = try await sql.registerKey(deleted, now: now)
        try await sql.deleteKey(deleted.keyID)

        let budget = try RateBudget(name: "budget-7", perMinute: 1)
        _ = try await sql.take(from: budget, now: now)
        _ = try await sql.take(from: budget, now: now)

        _ = try await sql.consumeToken("token-new", expiresAt: now.addingTimeInterval(60), now: now)
        _ = try await sql.isTokenConsumed("token-new")
        _ = try await sql.deleteExpiredTokens(now: now)

        let digest = Array(repeating: UInt8(0x5A), count: 32)
        try await sql.openDashboardSession(
            digest, expiresAt: now.addingTimeInterval(3_600), capacity: StoreLimits.maximumDashboardSessions, now: now)
        _ = try await sql.isDashboardSessionLive(digest, now: now)
        _ = try await sql.closeDashboardSession(digest)
        _ = try await sql.deleteExpiredDashboardSessions(now: now)

        _ = try await sql.acquireLease(on: "receipt-refresh", holder: "replica-1", duration: .seconds(60), now: now)
    }

    /// The growing tables `statement`'s plan reads with a sequential scan.
    static func sequentialScans(of statement: SQLStatement, on store: PostgresAttestationStore) async throws
        -> Set<String>
    {
        let explain = SQLStatement("EXPLAIN (FORMAT JSON) \(statement.sql)", statement.binds)
        let rows = try await store.executor.query("explaining a statement", explain, access: .read)
        let text = try #require(try rows.first?.bytes("QUERY PLAN"))
        let plan = try JSONSerialization.jsonObject(with: Data(text))
        var scanned: Set<String> = []
        func visit(_ node: Any) {
            if let list = node as? [Any] { list.forEach(visit) }
            guard let object = node as? [String: Any] else { return }
            if object["Node Type"] as? String == "Seq Scan", let table = object["Relation Name"] as? String,
                growing.contains(table)
            {
                scanned.insert(table)
            }
            object.values.forEach(visit)
        }
        visit(plan)
        return scanned
    }
}
