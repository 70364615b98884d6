import AttestKit
import AttestKitTestSupport
import Foundation
import Testing

@testable import AttestKitStore

/// The lazy preparation of a SQLite store (its first operation without ``SQLiteAttestationStore/prepare()``) belongs
/// to no caller: the first caller's task being cancelled while the preparation runs does not fail the others.
@Suite("SQLite preparation cancellation")
struct SQLitePreparationCancellationTests {
    /// How many fresh stores the race is run on: each must pass.
    static let rounds = 20

    @Test("the first caller of a store not yet prepared is cancelled at once: the other caller does not fail")
    func cancelledFirstCallerFailsNoOther() async throws {
        let unknown = try KeyID(bytes: Array(repeating: 0x5A, count: 32))
        for round in 0..<Self.rounds {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let store = SQLiteAttestationStore(path: directory.url.appendingPathComponent("store.sqlite").path)
            // A starts the preparation and is cancelled at once; B arrives while it runs and waits for it.
            let first = Task { try await store.keyWithoutReceipt(unknown) }
            first.cancel()
            let second = Task { try await store.keyWithoutReceipt(unknown) }
            let answer: Result<KeyRecord?, any Error> = await second.result
            switch answer {
            case .success(let record):
                #expect(record == nil)
            case .failure(let error):
                Issue.record("round \(round): a caller that was not cancelled failed: \(error)")
            }
            // A may fail with its cancellation, or have read before noticing it.
            _ = await first.result
            // And the store works afterwards.
            #expect(try await store.keyWithoutReceipt(unknown) == nil)
            await store.close()
        }
    }
}
