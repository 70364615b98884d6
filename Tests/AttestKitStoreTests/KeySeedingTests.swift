import AttestKit
import Crypto
import Foundation
import Testing

@testable import AttestKitStore

/// The bulk path of population benchmarks (``KeySeedingStore``): rows written straight into the SQL stores, counted
/// as registrations, readable and usable as any registered key.
@Suite("Key seeding")
struct KeySeedingTests {
    /// `count` keys: every 100th a real key (its identifier the digest of its point), the others fillers with a
    /// random identifier and that point.
    static func population(_ count: Int) -> [SeededKey] {
        let real = (0..<(count + 99) / 100).map { _ in TestKeys.key() }
        return (0..<count).map { index in
            let key = real[index / 100]
            guard index % 100 != 0 else { return SeededKey(keyID: key.keyID.bytes, publicKeyX963: key.publicKeyX963) }
            return SeededKey(
                keyID: Array(SHA256.hash(data: Array("filler \(index)".utf8))), publicKeyX963: key.publicKeyX963)
        }
    }

    @Test(
        "seeded keys are counted, read back at counter 0 and advance like registered ones",
        arguments: await StoreBackend.durable())
    func seedsCountedUsableKeys(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let seeding = try #require(store as? any KeySeedingStore)
            // More rows than one statement takes, and a short last statement.
            let keys = Self.population(1_000)
            _ = try await store.registerKey(try TestKeys.registration(), now: TestKeys.t0)
            try await seeding.seedKeys(keys, appID: TestKeys.appID, environment: .development, now: TestKeys.t0)
            // Vacuumed and analyzed (SQLite: analyzed) after the load, outside any transaction.
            try await seeding.settleSeededKeys()
            if let postgres = store as? PostgresAttestationStore {
                // Never analyzed, a table reads -1 tuples in pg_class. (Whether its pages are all visible depends on
                // the transactions other tests hold open on the database, so it is not read here.)
                let statistics = try await postgres.executor.query(
                    "reading the table's statistics",
                    SQLStatement(
                        """
                        SELECT reltuples::bigint AS tuples FROM pg_class WHERE oid = '\(postgres.executor.schema.quoted).keys'::regclass
                        """), access: .read, by: nil)
                let row = try #require(statistics.first)
                #expect(try row.requiredInteger("tuples") == 1_001)
            }
            let counts = try await store.keyCounts()
            #expect(counts.count(environment: .development, state: .active) == 1_000)
            #expect(counts.count(environment: .production, state: .active) == 1)
            for key in [keys[0], keys[500], keys[999]] {
                let keyID = try KeyID(bytes: key.keyID)
                let record = try #require(try await store.key(keyID))
                #expect(record.counter == 0 && record.publicKeyX963 == key.publicKeyX963 && record.revokedAt == nil)
                #expect(record.appID == TestKeys.appID && record.environment == .development)
                #expect(try await store.advanceCounter(of: keyID, to: 1, now: TestKeys.t0).counter == 1)
            }
        }
    }

    @Test(
        "a malformed row is refused before any SQL runs; a duplicate rolls the whole call back",
        arguments: await StoreBackend.durable())
    func refusesAndRollsBack(_ backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let seeding = try #require(store as? any KeySeedingStore)
            let keys = Self.population(450)
            let short = SeededKey(keyID: Array(keys[1].keyID.prefix(31)), publicKeyX963: keys[1].publicKeyX963)
            let compressed = SeededKey(keyID: keys[1].keyID, publicKeyX963: [0x02] + keys[1].publicKeyX963.dropFirst())
            for bad in [short, compressed] {
                let code = await outcome {
                    try await seeding.seedKeys(
                        Array(keys.prefix(10)) + [bad], appID: TestKeys.appID, environment: .development,
                        now: TestKeys.t0)
                }
                #expect(code == .invalidInput)
            }
            try await seeding.seedKeys([keys[449]], appID: TestKeys.appID, environment: .development, now: TestKeys.t0)
            // The duplicate sits in the second statement: the first statement's rows are rolled back too.
            await #expect(throws: StoreError.self) {
                try await seeding.seedKeys(keys, appID: TestKeys.appID, environment: .development, now: TestKeys.t0)
            }
            #expect(try await store.keyCounts().count(environment: .development, state: .active) == 1)
            #expect(try await store.key(try KeyID(bytes: keys[0].keyID)) == nil)
        }
    }
}
