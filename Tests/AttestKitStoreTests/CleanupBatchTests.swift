import AttestKit
import AttestKitTestSupport
import Foundation
import Testing

@testable import AttestKitStore

/// The cleanup deletes a backlog in bounded statements: one `DELETE` of every expired row held SQLite's only writer
/// (and every counter advance behind it) for as long as it ran, and on PostgreSQL it outlasted the operation
/// deadline, rolled back and never made progress while the table grew. The statements are the store's own, run on
/// a ``RecordingExecutor`` with batches of 100.
@Suite("Cleanup batches")
struct CleanupBatchTests {
    let t0 = TestKeys.t0
    static let batch = 100

    @Test(
        "a backlog of expired challenges and token records is deleted in statements of at most a batch each",
        arguments: await StoreBackend.durable())
    func backlogInBatches(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            if let sqlite = store as? SQLiteAttestationStore {
                try await backlog(store, RecordingExecutor(base: sqlite.sql.executor))
            } else {
                let postgres = try #require(store as? PostgresAttestationStore)
                try await backlog(store, RecordingExecutor(base: postgres.sql.executor))
            }
        }
    }

    @Test("a cancelled cleanup on SQLite reports what it deleted: a batch that committed is never reported failed")
    func cancelledCleanupCountsWhatItDeleted() async throws {
        try await StoreBackend.sqlite.withStore { store in
            let sqlite = try #require(store as? SQLiteAttestationStore)
            let sql = SQLStore(executor: sqlite.sql.executor, cleanupBatch: Self.batch)
            let later = t0.addingTimeInterval(10)
            for round in 0..<40 {
                for _ in 0..<300 { _ = try await store.issueChallenge(purpose: .attest, ttl: .seconds(10), now: t0) }
                let cleanup = Task { try await sql.deleteExpiredChallenges(now: later) }
                try await Task.sleep(for: .microseconds(100 * (round % 20)))
                cleanup.cancel()
                let reported = try? await cleanup.value
                // What is left is what the cancelled cleanup did not delete: all of it when it failed.
                let left = try await sql.deleteExpiredChallenges(now: later)
                #expect(left == 300 - (reported ?? 0), "round \(round): reported \(String(describing: reported))")
            }
        }
    }

    private func backlog<Base: SQLExecutor>(
        _ store: any AttestationStore, _ recording: RecordingExecutor<Base>
    ) async throws {
        let sql = SQLStore(executor: recording, cleanupBatch: Self.batch)
        for _ in 0..<250 { _ = try await store.issueChallenge(purpose: .attest, ttl: .seconds(10), now: t0) }
        let live = try await store.issueChallenge(purpose: .attest, ttl: .seconds(100), now: t0)
        for index in 0..<200 {
            #expect(try await store.consumeToken("jti-\(index)", expiresAt: t0.addingTimeInterval(10), now: t0))
        }
        #expect(try await store.consumeToken("jti-live", expiresAt: t0.addingTimeInterval(100), now: t0))

        #expect(try await sql.deleteExpiredChallenges(now: t0.addingTimeInterval(10)) == 250)
        #expect(try await sql.deleteExpiredTokens(now: t0.addingTimeInterval(10)) == 200)
        // 100 + 100 + 50, and 100 + 100 + 0: no statement deletes more than a batch.
        let statements = recording.recorded.map(\.operation)
        #expect(statements.filter { $0 == "deleting expired challenges" }.count == 3)
        #expect(statements.filter { $0 == "deleting expired tokens" }.count == 3)

        #expect(try await sql.deleteExpiredChallenges(now: t0.addingTimeInterval(10)) == 0)
        #expect(try await sql.deleteExpiredTokens(now: t0.addingTimeInterval(10)) == 0)
        _ = try await store.consumeChallenge(live.id, purpose: .attest, keyID: nil, now: t0.addingTimeInterval(10))
        #expect(try await store.isTokenConsumed("jti-live"))
        #expect(try await store.isTokenConsumed("jti-0") == false)
    }
}
