import AttestKit
import AttestKitStore
import AttestKitTesting
import Foundation
import Testing

@Suite("Challenges")
struct ChallengeTests {
    let t0 = TestKeys.t0

    @Test("a challenge is consumed exactly once and returned whole", arguments: await StoreBackend.all())
    func consumeOnce(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let issued = try await store.issueChallenge(purpose: .attest, ttl: .seconds(300), now: t0)
            #expect(issued.bytes.count == 32)
            #expect(issued.expiresAt == t0.addingTimeInterval(300))
            let consumed = try await store.consumeChallenge(
                issued.id, purpose: .attest, keyID: nil, now: t0.addingTimeInterval(1))
            #expect(consumed.bytes == issued.bytes)
            #expect(consumed.id == issued.id)
            #expect(consumed.consumedAt == t0.addingTimeInterval(1))
            await #expect(throws: StoreError.challengeConsumed) {
                _ = try await store.consumeChallenge(
                    issued.id, purpose: .attest, keyID: nil, now: t0.addingTimeInterval(2))
            }
        }
    }

    @Test("an expired challenge is refused as expired, to the millisecond", arguments: await StoreBackend.all())
    func expiry(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let late = try await store.issueChallenge(purpose: .assert, ttl: .seconds(60), now: t0)
            await #expect(throws: StoreError.challengeExpired) {
                _ = try await store.consumeChallenge(
                    late.id, purpose: .assert, keyID: nil, now: t0.addingTimeInterval(60))
            }
            let justInTime = try await store.issueChallenge(purpose: .assert, ttl: .seconds(60), now: t0)
            _ = try await store.consumeChallenge(
                justInTime.id, purpose: .assert, keyID: nil, now: t0.addingTimeInterval(59.999))
        }
    }

    @Test("an unknown identifier is refused as not found", arguments: await StoreBackend.all())
    func notFound(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            var generator = SystemRandomNumberGenerator()
            await #expect(throws: StoreError.challengeNotFound) {
                _ = try await store.consumeChallenge(
                    .random(using: &generator), purpose: .attest, keyID: nil, now: t0)
            }
        }
    }

    @Test("the wrong purpose is refused and burns the challenge", arguments: await StoreBackend.all())
    func purposeMismatch(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let issued = try await store.issueChallenge(purpose: .assert, now: t0)
            await #expect(throws: StoreError.challengePurposeMismatch) {
                _ = try await store.consumeChallenge(issued.id, purpose: .attest, keyID: nil, now: t0)
            }
            await #expect(throws: StoreError.challengeConsumed) {
                _ = try await store.consumeChallenge(issued.id, purpose: .assert, keyID: nil, now: t0)
            }
        }
    }

    @Test("a challenge bound to a key is refused for any other", arguments: await StoreBackend.all())
    func keyBinding(backend: StoreBackend) async throws {
        let keyA = TestKeys.key().keyID
        let keyB = TestKeys.key().keyID
        try await backend.withStore { store in
            let boundToA = try await store.issueChallenge(purpose: .assert, keyID: keyA, now: t0)
            #expect(boundToA.keyID == keyA)
            await #expect(throws: StoreError.challengeKeyMismatch) {
                _ = try await store.consumeChallenge(boundToA.id, purpose: .assert, keyID: keyB, now: t0)
            }
            let boundAgain = try await store.issueChallenge(purpose: .assert, keyID: keyA, now: t0)
            await #expect(throws: StoreError.challengeKeyMismatch) {
                _ = try await store.consumeChallenge(boundAgain.id, purpose: .assert, keyID: nil, now: t0)
            }
            let matching = try await store.issueChallenge(purpose: .assert, keyID: keyA, now: t0)
            _ = try await store.consumeChallenge(matching.id, purpose: .assert, keyID: keyA, now: t0)
            let unbound = try await store.issueChallenge(purpose: .assert, now: t0)
            _ = try await store.consumeChallenge(unbound.id, purpose: .assert, keyID: keyB, now: t0)
        }
    }

    @Test(
        "an attest challenge keeps the app it was issued for (its RP ID hash); a hash of another length is refused",
        arguments: await StoreBackend.all())
    func appBinding(backend: StoreBackend) async throws {
        let app = try AppID("ABCDE12345.com.example.app")
        try await backend.withStore { store in
            let bound = try await store.issueChallenge(purpose: .attest, appID: app, now: t0)
            #expect(bound.rpIDHash == app.rpIDHash && bound.description.contains("bound to an app"))
            let consumed = try await store.consumeChallenge(bound.id, purpose: .attest, keyID: nil, now: t0)
            #expect(consumed.rpIDHash == app.rpIDHash && consumed.bytes == bound.bytes)
            let unbound = try await store.issueChallenge(purpose: .attest, now: t0)
            #expect(try await store.consumeChallenge(unbound.id, purpose: .attest, keyID: nil, now: t0).rpIDHash == nil)
        }
        for length in [0, 31, 33] {
            #expect(throws: StoreError.invalidInput) {
                _ = try StoredChallenge(
                    id: ChallengeID(bytes: [UInt8](repeating: 1, count: 16)), bytes: [UInt8](repeating: 2, count: 32),
                    purpose: .attest, keyID: nil, rpIDHash: [UInt8](repeating: 3, count: length), createdAt: t0,
                    expiresAt: t0.addingTimeInterval(60))
            }
        }
    }

    @Test("garbage collection deletes exactly the expired challenges", arguments: await StoreBackend.all())
    func garbageCollection(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            var short: [StoredChallenge] = []
            for _ in 0..<3 {
                short.append(try await store.issueChallenge(purpose: .attest, ttl: .seconds(10), now: t0))
            }
            var long: [StoredChallenge] = []
            for _ in 0..<2 {
                long.append(try await store.issueChallenge(purpose: .attest, ttl: .seconds(100), now: t0))
            }
            _ = try await store.consumeChallenge(short[0].id, purpose: .attest, keyID: nil, now: t0)

            #expect(try await store.deleteExpiredChallenges(now: t0.addingTimeInterval(9.999)) == 0)
            #expect(try await store.deleteExpiredChallenges(now: t0.addingTimeInterval(10)) == 3)
            #expect(try await store.deleteExpiredChallenges(now: t0.addingTimeInterval(10)) == 0)
            for challenge in short {
                await #expect(throws: StoreError.challengeNotFound) {
                    _ = try await store.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: t0)
                }
            }
            for challenge in long {
                _ = try await store.consumeChallenge(
                    challenge.id, purpose: .attest, keyID: nil, now: t0.addingTimeInterval(50))
            }
        }
    }

    @Test("randomness is injected: one seed, one challenge", arguments: await StoreBackend.all())
    func injectedRandomness(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            var first = SplitMix64(seed: 7)
            var second = SplitMix64(seed: 7)
            let a = try StoredChallenge.random(
                purpose: .attest, ttl: .seconds(60), byteCount: 48, now: t0, using: &first)
            let b = try await store.issueChallenge(
                purpose: .attest, ttl: .seconds(60), byteCount: 48, now: t0, using: &second)
            #expect(a == b)
            #expect(b.bytes.count == 48)
            await #expect(throws: StoreError.invalidInput) {
                try await store.insertChallenge(a)
            }
            var other = SplitMix64(seed: 8)
            let c = try await store.issueChallenge(purpose: .attest, now: t0, using: &other)
            #expect(c.id != b.id)
            #expect(c.bytes != Array(b.bytes.prefix(32)))
        }
    }

    @Test("challenge sizes and lifetimes outside the bounds are refused", arguments: await StoreBackend.all())
    func bounds(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let largest = try await store.issueChallenge(purpose: .attest, byteCount: 1_024, now: t0)
            #expect(largest.bytes.count == 1_024)
            for (bytes, ttl) in [
                (31, Duration.seconds(60)), (1_025, .seconds(60)), (32, .zero), (32, .seconds(86_401)),
                (32, .seconds(-5)),
            ] {
                await #expect(throws: StoreError.invalidInput) {
                    _ = try await store.issueChallenge(purpose: .attest, ttl: ttl, byteCount: bytes, now: t0)
                }
            }
            await #expect(throws: StoreError.invalidInput) {
                _ = try await store.issueChallenge(purpose: .attest, now: Date(timeIntervalSince1970: -1))
            }
        }
    }

    @Test("the description never shows the challenge bytes")
    func description() throws {
        var generator = SplitMix64(seed: 1)
        let challenge = try StoredChallenge.random(purpose: .attest, ttl: .seconds(60), now: t0, using: &generator)
        let hex = challenge.bytes.prefix(4).map { String(format: "%02x", $0) }.joined()
        #expect(!challenge.description.contains(hex))
        #expect(!challenge.description.contains(Data(challenge.bytes).base64EncodedString()))
        #expect(challenge.description.contains(challenge.id.string))
    }
}

extension ChallengeTests {
    @Test(
        "a consumption given back makes the challenge consumable again; only that very consumption is undone",
        arguments: await StoreBackend.all())
    func release(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let issued = try await store.issueChallenge(purpose: .attest, ttl: .seconds(300), now: t0)
            let first = try await store.consumeChallenge(
                issued.id, purpose: .attest, keyID: nil, now: t0.addingTimeInterval(1))
            try await store.releaseChallenge(first)
            let second = try await store.consumeChallenge(
                issued.id, purpose: .attest, keyID: nil, now: t0.addingTimeInterval(2))
            #expect(second.bytes == issued.bytes && second.consumedAt == t0.addingTimeInterval(2))
            // The first consumption's record is stale now: releasing it again leaves the second one standing.
            try await store.releaseChallenge(first)
            await #expect(throws: StoreError.challengeConsumed) {
                _ = try await store.consumeChallenge(
                    issued.id, purpose: .attest, keyID: nil, now: t0.addingTimeInterval(3))
            }
            // A challenge never consumed, or one deleted, is left as it is.
            let fresh = try await store.issueChallenge(purpose: .attest, ttl: .seconds(300), now: t0)
            try await store.releaseChallenge(fresh)
            _ = try await store.consumeChallenge(fresh.id, purpose: .attest, keyID: nil, now: t0.addingTimeInterval(1))
        }
    }
}
