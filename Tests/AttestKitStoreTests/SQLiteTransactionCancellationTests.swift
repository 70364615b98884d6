import AttestKit
import AttestKitTestSupport
import Foundation
import Testing

@testable import AttestKitStore

/// A SQLite transaction whose task is cancelled mid-way still ends: SQLiteNIO's async `query` refuses work for a
/// cancelled task, so its `ROLLBACK` never ran and the writer went back to the pool inside the open transaction.
@Suite("SQLite transaction cancellation")
struct SQLiteTransactionCancellationTests {
    @Test("a transaction cancelled mid-way is rolled back, and later writes are committed and seen by another store")
    func cancelledTransactionRollsBack() async throws {
        try await SchemaMigrationTests.withDatabase(.sqlite) { database in
            let key = try TestKeys.registration()
            let store = try #require(try database.store() as? SQLiteAttestationStore)
            try await SchemaMigrationTests.running(store) { _ in
                try await store.prepare()
                _ = try await store.registerKey(key, now: SchemaMigrationTests.t0)
                // The task is cancelled after the transaction's first write (a receipt refresh stopped at shutdown).
                let cancelled = Task {
                    try await store.executor.transaction("cancelled", by: nil) { run in
                        _ = try await run(SQLStatement("UPDATE keys SET counter = 7"))
                        withUnsafeCurrentTask { $0?.cancel() }
                        _ = try await run(SQLStatement("SELECT 1"))
                        return 0
                    }
                }
                await #expect(throws: (any Error).self) { try await cancelled.value }

                // The same store's next write is committed: another store on the file sees it, not the rolled-back 7.
                #expect(try await store.advanceCounter(of: key.keyID, to: 1, now: SchemaMigrationTests.t0).counter == 1)
                let other = try database.store()
                try await SchemaMigrationTests.running(other) { other in
                    try await other.prepare()
                    #expect(try await other.key(key.keyID)?.counter == 1)
                }
                // And the writer takes a new transaction.
                _ = try await store.executor.transaction("after", by: nil) { run in
                    try await run(SQLStatement("SELECT 1")).count
                }
            }
        }
    }
}
