import AttestKit
import AttestKitStore
import Foundation
import Testing

/// Limited-use tokens: a token identifier is consumed once, atomically, across clients sharing a database.
@Suite("Consumed tokens")
struct ConsumedTokenTests {
    let t0 = TestKeys.t0

    @Test(
        "a token id is consumed once, reads as consumed until its record is deleted; expired records are deleted",
        arguments: await StoreBackend.all())
    func once(backend: StoreBackend) async throws {
        try await backend.withStore { store throws in
            let expiry = t0.addingTimeInterval(3_600)
            #expect(try await store.isTokenConsumed("jti-1") == false)
            #expect(try await store.consumeToken("jti-1", expiresAt: expiry, now: t0) == true)
            #expect(try await store.isTokenConsumed("jti-1") == true)
            #expect(try await store.isTokenConsumed("jti-2") == false)
            #expect(try await store.consumeToken("jti-1", expiresAt: expiry, now: t0) == false)
            #expect(try await store.consumeToken("jti-2", expiresAt: t0.addingTimeInterval(60), now: t0) == true)
            #expect(try await store.deleteExpiredTokens(now: t0.addingTimeInterval(59)) == 0)
            #expect(try await store.deleteExpiredTokens(now: t0.addingTimeInterval(60)) == 1)
            #expect(try await store.isTokenConsumed("jti-2") == false)
            #expect(try await store.isTokenConsumed("jti-1") == true)
            #expect(try await store.consumeToken("jti-1", expiresAt: expiry, now: t0) == false)
            #expect(try await store.deleteExpiredTokens(now: expiry) == 1)
            #expect(try await store.isTokenConsumed("jti-1") == false)
            for bad in ["", "a b", String(repeating: "a", count: 129)] {
                await #expect(throws: StoreError.invalidInput) { try await store.isTokenConsumed(bad) }
            }
            // A time no store can hold is refused whether or not the token was consumed, on every backend alike.
            #expect(try await store.consumeToken("jti-3", expiresAt: expiry, now: t0) == true)
            for id in ["jti-3", "jti-4"] {
                await #expect(throws: StoreError.invalidInput) {
                    try await store.consumeToken(id, expiresAt: Date(timeIntervalSince1970: -1), now: t0)
                }
            }
        }
    }

    @Test(
        "64 concurrent consumptions of one token across clients: exactly one wins",
        arguments: await StoreBackend.clientVariants())
    func concurrent(backend: StoreBackend, clients: Int) async throws {
        try await backend.withStores(count: clients) { stores in
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<64 {
                    let store = stores[index % stores.count]
                    group.addTask {
                        try await store.consumeToken("race", expiresAt: t0.addingTimeInterval(600), now: t0)
                    }
                }
                return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
            }
            #expect(wins == 1)
        }
    }

    @Test("token ids that are empty, too long or not printable ASCII are refused", arguments: await StoreBackend.all())
    func bounds(backend: StoreBackend) async throws {
        try await backend.withStore { store throws in
            for id in ["", String(repeating: "a", count: 129), "with space", "tab\t", "é"] {
                await #expect(throws: StoreError.self) {
                    try await store.consumeToken(id, expiresAt: t0, now: t0)
                }
            }
            #expect(try await store.consumeToken(String(repeating: "a", count: 128), expiresAt: t0, now: t0) == true)
        }
    }
}
