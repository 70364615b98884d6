import AttestKit
import AttestKitTestSupport
import Foundation
import PostgresNIO
import Testing

@testable import AttestKitStore

/// PostgreSQL's request path runs prepared: the combined counter advance and key read are parsed once per pooled
/// connection and then only bound and executed, their text naming `keys` without a schema because each connection's
/// `search_path` is the store's schema.
@Suite("Prepared statements")
struct PreparedStatementTests {
    @Test(
        "the counter advance and the key read are prepared once per connection and executed again by name",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func preparedOncePerConnection() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        try await StoreBackend.postgres.withStore { store in
            let store = try #require(store as? PostgresAttestationStore)
            let registrations = try (0..<3).map { _ in try TestKeys.registration() }
            for registration in registrations { _ = try await store.registerKey(registration, now: TestKeys.t0) }
            let sql = SQLStore(executor: store.executor)
            let keys = registrations.map { $0.keyID.bytes }
            let (logger, client) = (store.executor.logger, store.executor.client)
            let counts = try await client.withConnection { connection in
                // Three executions of the advance (batches of 3, 1 and 2 keys) and two of the read, on one
                // connection: each statement is prepared once, whatever its number of rows.
                for (counter, batch) in [(1, keys), (2, [keys[0]]), (3, Array(keys[1...]))] {
                    let advance = sql.advancingCounters(
                        batch.map { [.bytes($0), .integer(Int64(counter)), .integer(1_800_000_000_000), .integer(0)] })
                    #expect(advance.prepared == .advanceCounters)
                    let advanced = try await PostgresExecutor.run(advance, on: connection, logger: logger)
                    #expect(advanced.count == batch.count)
                }
                for batch in [keys, [keys[2]]] {
                    let read = sql.readingKeys(batch.map { [.bytes($0)] })
                    #expect(read.prepared == .readKeys)
                    let rows = try await PostgresExecutor.run(read, on: connection, logger: logger)
                    #expect(Set(try rows.map { try $0.requiredBytes("key_id") }) == Set(batch))
                }
                let statements = SQLStatement(
                    """
                    SELECT name, generic_plans + custom_plans AS executions FROM pg_prepared_statements
                    WHERE name IN ('attestkit_advance_counters', 'attestkit_read_keys')
                    """)
                var counts: [String: Int64] = [:]
                for row in try await PostgresExecutor.run(statements, on: connection, logger: logger) {
                    counts[try row.requiredText("name")] = try row.requiredInteger("executions")
                }
                return counts
            }
            #expect(counts == ["attestkit_advance_counters": 3, "attestkit_read_keys": 2])
            // The counters the prepared advance wrote, read back by the store.
            for (index, key) in registrations.enumerated() {
                #expect(try await store.key(key.keyID)?.counter == (index == 0 ? 2 : 3))
            }
        }
    }

    @Test(
        "the store's connections resolve the unqualified key table to its own; a connection whose search_path was changed is refused by name",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func searchPathChecked() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        try await StoreBackend.postgres.withStore { store in
            let store = try #require(store as? PostgresAttestationStore)
            let (client, schema, logger) = (store.executor.client, store.executor.schema, store.executor.logger)
            try await client.withConnection { connection in
                try await PostgresPreparedStatements.checkSearchPath(on: connection, schema: schema, logger: logger)
                // A pooler that dropped the startup parameter leaves the default path, where `keys` is not the store's.
                _ = try await PostgresExecutor.run(
                    SQLStatement("SET search_path TO public"), on: connection, logger: logger)
                let error = await #expect(throws: StoreError.self) {
                    try await PostgresPreparedStatements.checkSearchPath(on: connection, schema: schema, logger: logger)
                }
                #expect(error?.code == .storageUnavailable)
                #expect(error?.reason.contains("search_path is public") == true)
                // Back to the value the connection started with, before the pool hands it out again.
                _ = try await PostgresExecutor.run(SQLStatement("RESET search_path"), on: connection, logger: logger)
                try await PostgresPreparedStatements.checkSearchPath(on: connection, schema: schema, logger: logger)
            }
        }
    }

    @Test(
        "two stores in two schemas of one database keep their own keys: the unqualified prepared text follows each pool's schema",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func schemasStayApart() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        let gate = PostgresTestServer.shared.gate
        await gate.enter()
        let names = (0..<2).map { _ in "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "") }
        do {
            let stores = try names.map { try PostgresTestServer.store(schema: $0) }
            try await StoreBackend.running(stores) { running in
                do {
                    try await Self.keepApart(running[0], running[1])
                } catch {
                    for store in stores { try? await store.dropSchema() }
                    throw error
                }
                for store in stores { try await store.dropSchema() }
            }
        } catch {
            await gate.leave()
            throw error
        }
        await gate.leave()
    }

    /// The same key, advanced far in one schema and read and advanced from its own count in the other; a key only
    /// the second schema holds is unknown to the first.
    static func keepApart(_ first: any AttestationStore, _ second: any AttestationStore) async throws {
        let registration = try TestKeys.registration()
        _ = try await first.registerKey(registration, now: TestKeys.t0)
        _ = try await second.registerKey(registration, now: TestKeys.t0)
        #expect(try await first.advanceCounter(of: registration.keyID, to: 50, now: TestKeys.t0).counter == 50)
        #expect(try await second.keyWithoutReceipt(registration.keyID)?.counter == 0)
        #expect(try await second.advanceCounter(of: registration.keyID, to: 3, now: TestKeys.t0).counter == 3)
        #expect(try await first.keyWithoutReceipt(registration.keyID)?.counter == 50)
        let other = try TestKeys.registration()
        _ = try await second.registerKey(other, now: TestKeys.t0)
        #expect(try await first.keyWithoutReceipt(other.keyID) == nil)
        await #expect(throws: StoreError.self) {
            _ = try await first.advanceCounter(of: other.keyID, to: 1, now: TestKeys.t0)
        }
    }
}
