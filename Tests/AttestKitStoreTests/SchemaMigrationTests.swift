import AttestKit
import AttestKitTestSupport
import Foundation
import Logging
import ServiceLifecycle
import Testing

@testable import AttestKitStore

/// Expand, then contract: a release runs on any schema its migrations leave compatible with it, so replicas of two
/// releases share one database during a rolling upgrade and a rollback needs no down-migration; a server that
/// does not migrate (`storage.migrations=verify`) refuses a schema that lacks migrations instead of applying them.
@Suite("Schema migrations")
struct SchemaMigrationTests {
    static let t0 = TestKeys.t0

    /// One database of a durable backend, opened by as many stores as a test wants, and raw SQL on it (what a newer
    /// release's migration would run).
    struct Database {
        let backend: StoreBackend
        let path: String
        let schema: String

        func store(_ migrations: MigrationPolicy = .apply) throws -> any AttestationStore {
            switch backend {
            case .postgres:
                try PostgresAttestationStore(
                    configuration: PostgresTestServer.configuration(schema: schema), migrations: migrations)
            default:
                SQLiteAttestationStore(configuration: .init(path: path), migrations: migrations)
            }
        }

        /// `name` qualified as this backend's statements need it.
        func table(_ name: String) -> String { backend == .postgres ? "\"\(schema)\".\(name)" : name }

        /// The statements that turn the current schema back into the one version 8 or 9 left: without the columns
        /// migrations 9 (`keys.key_access_control`) and 10 (`challenges.rp_id_hash`) add, and that version recorded.
        func undoing(to version: Int) -> [String] {
            var statements = ["ALTER TABLE \(table("challenges")) DROP COLUMN rp_id_hash"]
            if version < 9 { statements.insert("ALTER TABLE \(table("keys")) DROP COLUMN key_access_control", at: 0) }
            return statements + ["UPDATE \(table("schema_version")) SET version = \(version)"]
        }

        /// Runs `statement` through `store`'s own connections.
        func execute(_ statement: String, on store: any AttestationStore) async throws {
            switch store {
            case let store as SQLiteAttestationStore:
                _ = try await store.executeOnWriter(statement)
            case let store as PostgresAttestationStore:
                try await store.execute(statement)
            default:
                Issue.record("not a SQL store")
            }
        }
    }

    /// Runs `body` with a fresh database of `backend` (PostgreSQL: a schema of its own, dropped after).
    static func withDatabase(_ backend: StoreBackend, _ body: (Database) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let schema = "m_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let database = Database(
            backend: backend, path: directory.url.appendingPathComponent("store.sqlite").path, schema: schema)
        guard backend == .postgres else { return try await body(database) }
        guard await PostgresTestServer.shared.isAvailable() else { return }
        await PostgresTestServer.shared.gate.enter()
        do {
            try await body(database)
        } catch {
            await drop(database)
            await PostgresTestServer.shared.gate.leave()
            throw error
        }
        await drop(database)
        await PostgresTestServer.shared.gate.leave()
    }

    private static func drop(_ database: Database) async {
        guard let store = try? PostgresTestServer.store(schema: database.schema) else { return }
        try? await running(store) { _ in try await store.dropSchema() }
    }

    /// Runs `store`'s service around `body` and closes it after; `body` prepares it when it wants to.
    static func running<Result: Sendable>(
        _ store: any AttestationStore, _ body: (any AttestationStore) async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            do {
                let result = try await body(store)
                await store.close()
                return result
            } catch {
                await store.close()
                throw error
            }
        }
    }

    /// Runs `body` while a running replica's transaction has read `challenges` and stays open (a long query, or a
    /// session idle in a transaction): an ALTER TABLE of `challenges` cannot have its table until it ends. `body` is
    /// given that replica's store, running.
    static func whileChallengesAreHeld(
        _ database: Database, _ body: (PostgresAttestationStore) async throws -> Void
    ) async throws {
        let holder = try #require(try database.store() as? PostgresAttestationStore)
        let (held, holding) = AsyncStream<Void>.makeStream()
        let (release, releasing) = AsyncStream<Void>.makeStream()
        let challenges = database.table("challenges")
        try await Self.running(holder) { _ in
            let transaction = Task {
                try await holder.executor.transaction("holding challenges", by: .now + .seconds(120)) { run in
                    _ = try await run(SQLStatement("SELECT count(*) FROM \(challenges)"))
                    holding.yield()
                    for await _ in release { break }
                    return 0
                }
            }
            for await _ in held { break }
            do {
                try await body(holder)
            } catch {
                releasing.yield()
                _ = try? await transaction.value
                throw error
            }
            releasing.yield()
            _ = try await transaction.value
        }
    }

    /// The durable backends: SQLite, and PostgreSQL when it answers or is required.
    static func backends() async -> [StoreBackend] { await StoreBackend.durable() }

    /// The error `body` throws, if any.
    static func failure(_ body: () async throws -> Void) async -> StoreError? {
        do {
            try await body()
            return nil
        } catch let error as StoreError {
            return error
        } catch {
            Issue.record("not a StoreError: \(error)")
            return nil
        }
    }

    @Test("every migration after the first is additive, and both backends know the same number")
    func declarations() {
        let postgres = PostgresSchema(name: "attestkit").migrations
        #expect(postgres.count == SQLiteSchema.migrations.count)
        #expect(SQLMigration.oldestCompatibleRelease(of: postgres) == 1)
        #expect(SQLMigration.oldestCompatibleRelease(of: SQLiteSchema.migrations) == 1)
        #expect(SQLMigration.oldestCompatibleRelease(of: [.breaking("a"), .additive("b"), .breaking("c")]) == 3)
        #expect(SQLMigration.oldestCompatibleRelease(of: [.breaking("a"), .breaking("b"), .additive("c")]) == 2)
        #expect(SQLMigration.oldestCompatibleRelease(of: []) == 0)
        // Each migration records the version it leaves as it commits: with `compatible_from` from the one adding it.
        for migrations in [postgres, SQLiteSchema.migrations] {
            let adding = migrations.indices.filter { index in
                migrations[index].statements.contains { $0.contains("ADD COLUMN compatible_from") }
            }
            #expect(adding == [SQLMigrations.compatibilityColumnMigration - 1])
        }
    }

    @Test("this release runs on a schema one additive migration ahead, migrating or not", arguments: await backends())
    func additiveAhead(backend: StoreBackend) async throws {
        try await Self.withDatabase(backend) { database in
            let known = SQLiteSchema.migrations.count
            // A newer release: its migration adds a nullable column and a table, and declares itself additive.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                for statement in [
                    "ALTER TABLE \(database.table("keys")) ADD COLUMN attested_os_build TEXT",
                    "CREATE TABLE \(database.table("future_notes")) (note TEXT)",
                    "UPDATE \(database.table("schema_version")) SET version = version + 1",
                ] {
                    try await database.execute(statement, on: store)
                }
            }
            for policy in [MigrationPolicy.apply, .verify] {
                try await Self.running(try database.store(policy)) { store in
                    try await store.prepare()
                    #expect(await store.schemaVersion == SchemaVersion(found: known + 1, current: known + 1, known: known))
                    // Every kind of record still reads and writes.
                    let registration = try TestKeys.registration(receiptRefreshAt: Self.t0)
                    _ = try await store.registerKey(registration, now: Self.t0)
                    #expect(try await store.advanceCounter(of: registration.keyID, to: 1, now: Self.t0).counter == 1)
                    let update = try TestKeys.receipt(at: 60, riskMetric: 3)
                    #expect(try await store.storeReceipt(update, for: registration.keyID, now: Self.t0).riskMetric == 3)
                    let challenge = try await store.issueChallenge(purpose: .attest, now: Self.t0)
                    _ = try await store.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: Self.t0)
                    #expect(try await store.consumeToken("t-\(policy)", expiresAt: Self.t0 + 60, now: Self.t0))
                    #expect(try await store.keyCounts().total >= 1)
                }
            }
            // Nothing was applied again, nothing undone: the newer release's column is still there.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                try await database.execute(
                    "UPDATE \(database.table("keys")) SET attested_os_build = '21A5' WHERE counter = 1", on: store)
            }
        }
    }

    @Test("a newer schema that is not additive is refused, untouched", arguments: await backends())
    func breakingAhead(backend: StoreBackend) async throws {
        try await Self.withDatabase(backend) { database in
            let known = SQLiteSchema.migrations.count
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                try await database.execute(
                    "UPDATE \(database.table("schema_version")) SET version = version + 1, compatible_from = version + 1",
                    on: store)
            }
            for policy in [MigrationPolicy.apply, .verify] {
                let error = await Self.failure {
                    try await Self.running(try database.store(policy)) { store in try await store.prepare() }
                }
                #expect(error?.code == .storageUnavailable)
                #expect(error?.reason.contains("needs a release that knows at least \(known + 1) migrations") == true)
            }
        }
    }

    @Test("a server that does not migrate refuses a missing or older schema, naming attestkit migrate",
        arguments: await backends())
    func verifyRefusesMissingOrOlder(backend: StoreBackend) async throws {
        try await Self.withDatabase(backend) { database in
            let missing = await Self.failure {
                try await Self.running(try database.store(.verify)) { store in try await store.prepare() }
            }
            #expect(missing?.code == .storageUnavailable)
            #expect(missing?.reason.contains("run `attestkit migrate`") == true)
            if backend == .sqlite {
                #expect(!FileManager.default.fileExists(atPath: database.path))
            }

            try await Self.running(try database.store(.apply)) { store in
                try await store.prepare()
                let known = SQLiteSchema.migrations.count
                #expect(await store.schemaVersion == SchemaVersion(found: 0, current: known, known: known))
            }
            try await Self.running(try database.store(.verify)) { store in try await store.prepare() }

            // An older schema (as the previous release left it) is not migrated by a server that does not migrate.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                try await database.execute("UPDATE \(database.table("schema_version")) SET version = version - 1", on: store)
            }
            let older = await Self.failure {
                try await Self.running(try database.store(.verify)) { store in try await store.prepare() }
            }
            #expect(older?.code == .storageUnavailable)
            #expect(older?.reason.contains("run `attestkit migrate`") == true)
        }
    }

    @Test(
        "migration 9 on a database of version 8 with keys: theirs read as none, new ones keep their access control",
        arguments: await backends())
    func keyAccessControlFromVersion8(backend: StoreBackend) async throws {
        try await Self.withDatabase(backend) { database in
            let known = SQLiteSchema.migrations.count
            #expect(known == 10)
            let old = try TestKeys.registration()
            // The database as version 8 left it: a key registered, no key_access_control column (nor migration 10's).
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                _ = try await store.registerKey(old, now: Self.t0)
                for statement in database.undoing(to: 8) {
                    try await database.execute(statement, on: store)
                }
            }
            // A server that does not migrate refuses it; one that does applies migrations 9 and 10 only.
            let refused = await Self.failure {
                try await Self.running(try database.store(.verify)) { store in try await store.prepare() }
            }
            #expect(refused?.code == .storageUnavailable)
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                #expect(await store.schemaVersion == SchemaVersion(found: 8, current: 10, known: known))
                let existing = try #require(try await store.key(old.keyID))
                #expect(existing.keyAccessControl == nil && existing.keyAccessControlReading == .absent)
                #expect(existing.bundleVersion == "42" && existing.counter == 0)
                #expect(try await store.advanceCounter(of: old.keyID, to: 1, now: Self.t0).keyAccessControl == nil)
                let new = try TestKeys.registration(keyAccessControl: TestKeys.macOSAccessControl)
                _ = try await store.registerKey(new, now: Self.t0)
                #expect(try await store.key(new.keyID)?.keyAccessControl == TestKeys.macOSAccessControl)
            }
        }
    }

    @Test(
        "a migration behind a long transaction gives up after PostgreSQL's lock timeout, changing nothing, then applies",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() },
        .timeLimit(.minutes(3)))
    func migrationLockTimeout() async throws {
        try await Self.withDatabase(.postgres) { database in
            // Version 9 of the database: migration 10 alters `challenges`.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                for statement in database.undoing(to: 9) {
                    try await database.execute(statement, on: store)
                }
            }
            try await Self.whileChallengesAreHeld(database) { _ in
                let start = ContinuousClock.now
                let refused = await Self.failure {
                    try await Self.running(try database.store()) { store in try await store.prepare() }
                }
                let waited = ContinuousClock.now - start
                #expect(refused?.code == .storageUnavailable)
                #expect(refused?.reason.contains("waited 5s for a table that another transaction holds") == true)
                #expect(waited >= .seconds(4) && waited < .seconds(60), "\(waited)")
            }
            // Nothing was changed, and once the transaction ended the migration applies.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                #expect(await store.schemaVersion?.found == 9)
                #expect(await store.schemaVersion?.current == 10)
            }
        }
    }

    @Test(
        "migrations over several versions: one behind a long transaction leaves those before it applied and unlocked",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() },
        .timeLimit(.minutes(3)))
    func migrationsCommitOneByOne() async throws {
        try await Self.withDatabase(.postgres) { database in
            // Version 8 of the database: migration 9 alters `keys`, migration 10 `challenges`.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                for statement in database.undoing(to: 8) {
                    try await database.execute(statement, on: store)
                }
            }
            let schema = database.schema
            try await Self.whileChallengesAreHeld(database) { holder in
                let migrating = Task {
                    await Self.failure {
                        try await Self.running(try database.store()) { store in try await store.prepare() }
                    }
                }
                // While migration 10 waits for `challenges`, is `keys` (which migration 9 altered) still locked?
                var keysLockedWhileWaiting: Int64?
                for _ in 0..<3_000 where keysLockedWhileWaiting == nil {
                    keysLockedWhileWaiting = try await holder.executor.transaction("observing", by: .now + .seconds(30))
                    { run in
                        let rows = try await run(
                            SQLStatement(
                                """
                                SELECT
                                    (SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                                        WHERE c.relnamespace = '\(schema)'::regnamespace AND c.relname = 'challenges'
                                            AND NOT l.granted) AS waiting,
                                    (SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
                                        WHERE c.relnamespace = '\(schema)'::regnamespace AND c.relname = 'keys'
                                            AND l.mode = 'AccessExclusiveLock' AND l.granted) AS locked
                                """))
                        guard let row = rows.first, try row.integer("waiting") ?? 0 > 0 else { return nil }
                        return try row.integer("locked")
                    }
                    if keysLockedWhileWaiting == nil { try await Task.sleep(for: .milliseconds(5)) }
                }
                let refused = await migrating.value
                #expect(keysLockedWhileWaiting == 0, "migration 9's lock on keys is held while migration 10 waits")
                #expect(refused?.code == .storageUnavailable)
                #expect(refused?.reason.contains("waited 5s for a table that another transaction holds") == true)
            }
            // Migration 9 stayed applied (its compatibility recorded with it); starting again applies 10.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                #expect(await store.schemaVersion == SchemaVersion(found: 9, current: 10, known: 10))
            }
        }
    }

    @Test(
        "migration 10 on a database of version 9 with an attest challenge: it stays for any app, new ones keep theirs",
        arguments: await backends())
    func challengeAppFromVersion9(backend: StoreBackend) async throws {
        try await Self.withDatabase(backend) { database in
            let app = try AppID("ABCDE12345.com.example.app")
            let issuedBefore = try StoredChallenge(
                id: ChallengeID(bytes: [UInt8](repeating: 9, count: 16)), bytes: [UInt8](repeating: 1, count: 32),
                purpose: .attest, keyID: nil, createdAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(300))
            // The database as version 9 left it: an attest challenge issued, no rp_id_hash column.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                try await store.insertChallenge(issuedBefore)
                for statement in database.undoing(to: 9) {
                    try await database.execute(statement, on: store)
                }
            }
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                let known = SQLiteSchema.migrations.count
                #expect(await store.schemaVersion == SchemaVersion(found: 9, current: 10, known: known))
                let consumed = try await store.consumeChallenge(
                    issuedBefore.id, purpose: .attest, keyID: nil, now: Self.t0)
                #expect(consumed.rpIDHash == nil && consumed.bytes == issuedBefore.bytes)
                let bound = try await store.issueChallenge(purpose: .attest, appID: app, now: Self.t0)
                #expect(bound.rpIDHash == app.rpIDHash)
                let read = try await store.consumeChallenge(bound.id, purpose: .attest, keyID: nil, now: Self.t0)
                #expect(read.rpIDHash == app.rpIDHash)
            }
        }
    }
}
