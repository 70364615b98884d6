import AttestKit
import AttestKitStore
import Foundation
import Testing

/// The storage protocols are small: a backend implements what it stores and gets the rest from the protocol.
@Suite("Small store protocols")
struct SmallProtocolTests {
    /// A backend of challenges only: it implements the three operations of ``ChallengeStore`` and nothing else.
    actor ChallengesOnly: ChallengeStore {
        private var challenges: [ChallengeID: StoredChallenge] = [:]
        private var consumed: Set<ChallengeID> = []

        func insertChallenge(_ challenge: StoredChallenge) throws(StoreError) {
            guard challenges[challenge.id] == nil else { throw StoreError(.invalidInput, "in use") }
            challenges[challenge.id] = challenge
        }

        func consumeChallenge(
            _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
        ) throws(StoreError) -> StoredChallenge {
            guard let existing = challenges[id] else { throw .challengeNotFound }
            guard !consumed.contains(id) else { throw .challengeConsumed }
            guard !existing.isExpired(at: now) else { throw .challengeExpired }
            consumed.insert(id)
            return existing
        }

        func deleteExpiredChallenges(now: Date) throws(StoreError) -> Int {
            let before = challenges.count
            challenges = challenges.filter { !$0.value.isExpired(at: now) }
            return before - challenges.count
        }
    }

    @Test("a challenges-only backend issues challenges through the protocol's default, and consumes each once")
    func challengesOnly() async throws {
        let store = ChallengesOnly()
        let t0 = TestKeys.t0
        let issued = try await store.issueChallenge(purpose: .attest, ttl: .seconds(60), now: t0)
        #expect(issued.bytes.count == StoreLimits.minimumChallengeBytes)
        #expect(try await store.consumeChallenge(issued.id, purpose: .attest, keyID: nil, now: t0).id == issued.id)
        let again = await #expect(throws: StoreError.self) {
            try await store.consumeChallenge(issued.id, purpose: .attest, keyID: nil, now: t0)
        }
        #expect(again?.code == .challengeConsumed)
        #expect(try await store.deleteExpiredChallenges(now: t0.addingTimeInterval(60)) == 1)
    }

    @Test("every backend is each small protocol: the same value serves a part that needs only one of them")
    func backendsAreEachProtocol() async throws {
        let store: any AttestationStore = MemoryAttestationStore()
        let tokens: any ConsumedTokenStore = store
        let budgets: any RateBudgetStore = store
        let keys: any KeyStore = store
        let challenges: any ChallengeStore = store
        #expect(try await tokens.consumeToken("jti", expiresAt: TestKeys.t0, now: TestKeys.t0))
        #expect(try await budgets.take(from: RateBudget(name: "b", perMinute: 1), now: TestKeys.t0) == nil)
        #expect(try await keys.keyCounts().total == 0)
        _ = try await challenges.issueChallenge(purpose: .assert, now: TestKeys.t0)
    }
}
