import AttestKit
import AttestKitTestSupport
import Foundation
import Testing

@testable import AttestKitStore

extension SchemaMigrationTests {
    /// The statements that take a PostgreSQL database of this release back to version 4: migrations 5 to 10 undone.
    static func postgresVersion4(_ database: Database) -> [String] {
        [
            "DROP TRIGGER keys_count ON \(database.table("keys"))",
            "DROP FUNCTION \"\(database.schema)\".count_keys()",
            "DROP TABLE \(database.table("key_counts"))",
            "DROP TABLE \(database.table("job_leases"))",
            "ALTER TABLE \(database.table("schema_version")) DROP COLUMN compatible_from",
            "DROP TABLE \(database.table("dashboard_sessions"))",
            "ALTER TABLE \(database.table("keys")) DROP COLUMN receipt_expires_at_ms",
            "ALTER TABLE \(database.table("keys")) RESET (fillfactor)",
            "ALTER TABLE \(database.table("keys")) DROP COLUMN key_access_control",
            "ALTER TABLE \(database.table("challenges")) DROP COLUMN rp_id_hash",
            "UPDATE \(database.table("schema_version")) SET version = 4",
        ]
    }

    @Test(
        "migration 5 counts a key that the previous release registers while it runs (the keys wait for its trigger)",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() },
        .timeLimit(.minutes(3)))
    func keyCountsFromVersion4() async throws {
        try await Self.withDatabase(.postgres) { database in
            // The database as version 4 left it, with one key.
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                _ = try await store.registerKey(try TestKeys.registration(), now: Self.t0)
                for statement in Self.postgresVersion4(database) {
                    try await database.execute(statement, on: store)
                }
            }
            // A replica of the previous release registers a key in a transaction that is still open when the
            // migration starts.
            let holder = try #require(try database.store() as? PostgresAttestationStore)
            let watcher = try #require(try database.store() as? PostgresAttestationStore)
            let (inserted, inserting) = AsyncStream<Void>.makeStream()
            let (commit, committing) = AsyncStream<Void>.makeStream()
            try await Self.running(holder) { _ in
                try await Self.running(watcher) { _ in
                    let registration = Task {
                        try await holder.executor.transaction("registering", by: .now + .seconds(120)) { run in
                            _ = try await run(
                                SQLStatement(
                                    """
                                    INSERT INTO \(database.table("keys"))
                                        (key_id, public_key, app_id, environment, counter, created_at_ms)
                                    VALUES (decode(repeat('ab', 32), 'hex'), decode(repeat('04', 65), 'hex'),
                                        'ABCDE12345.com.example.app', 'production', 0, 0)
                                    """))
                            inserting.yield()
                            for await _ in commit { break }
                            return 0
                        }
                    }
                    for await _ in inserted { break }
                    let migration = Task {
                        try await Self.running(try database.store()) { store in
                            try await store.prepare()
                            return try await store.keyCounts()
                        }
                    }
                    // The registration commits once the migration waits for `keys`: with the lock before it counts,
                    // without it only at `CREATE TRIGGER`, after counting one key.
                    let start = ContinuousClock.now
                    while ContinuousClock.now - start < .seconds(30) {
                        let waiting = try await watcher.executor.query(
                            "watching locks",
                            SQLStatement(
                                """
                                SELECT count(*) AS n FROM pg_locks
                                WHERE NOT granted AND relation = '\(database.table("keys"))'::regclass
                                """), access: .read)
                        if try waiting.first?.requiredInteger("n") ?? 0 > 0 { break }
                        try await Task.sleep(for: .milliseconds(20))
                    }
                    committing.yield()
                    _ = try await registration.value
                    let counts = try await migration.value
                    #expect(counts.count(environment: .production, state: .active) == 2, "\(counts)")
                }
            }
            try await Self.running(try database.store()) { store in
                try await store.prepare()
                #expect(await store.schemaVersion?.found == SQLiteSchema.migrations.count)
                #expect(try await store.keyCounts().total == 2)
            }
        }
    }
}
