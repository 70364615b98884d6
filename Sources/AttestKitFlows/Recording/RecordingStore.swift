import AttestKit
import AttestKitStore
import Foundation
import Synchronization

/// A decision's store that notes what the store answered: the challenge it handed out, the key it read and its
/// first refusal with the step it came at. What a ``VerificationRecorder`` writes of a failed verification comes
/// from here, so the decision itself knows nothing of recording.
///
/// One per recorded verification; only made when a recorder is configured.
final class RecordingStore<Base: DecisionStore>: DecisionStore {
    /// What the store answered.
    struct Answers: Sendable {
        /// The bytes of the challenge the store handed out.
        var challenge: [UInt8]?
        /// The app that challenge was issued for (its RP ID hash), if any.
        var challengeApp: [UInt8]?
        /// The key the store (or the gate's cache) answered, when it answered one.
        var key: KeyRecord?
        /// The store's first refusal, and at which step.
        var refusal: RecordedStoreAnswer?
    }

    private let base: Base
    private let answers = Mutex(Answers())

    /// Notes the answers of `base`.
    init(_ base: Base) {
        self.base = base
    }

    /// What the store answered so far.
    var recorded: Answers { answers.withLock { $0 } }

    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        let challenge = try await noting(.challenge) { () async throws(StoreError) in
            try await base.consumeChallenge(id, purpose: purpose, keyID: keyID, now: now)
        }
        answers.withLock {
            $0.challenge = challenge.bytes
            $0.challengeApp = challenge.rpIDHash
        }
        return challenge
    }

    func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        let key = try await noting(.key) { () async throws(StoreError) in try await base.key(keyID) }
        answers.withLock { $0.key = key }
        return key
    }

    func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord {
        try await noting(.counter) { () async throws(StoreError) in
            try await base.advanceCounter(of: keyID, to: counter, now: now, usedSince: usedSince)
        }
    }

    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        try await noting(.registration) { () async throws(StoreError) in
            try await base.registerKey(registration, now: now)
        }
    }

    func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        try await base.releaseChallenge(challenge)
    }

    /// Runs `call`, noting its refusal at `step` when it is the first.
    private func noting<Answer>(
        _ step: RecordedStoreAnswer.Step, _ call: () async throws(StoreError) -> Answer
    ) async throws(StoreError) -> Answer {
        do {
            return try await call()
        } catch {
            answers.withLock { answers in
                if answers.refusal == nil {
                    answers.refusal = RecordedStoreAnswer(step: step, code: error.code.rawValue)
                }
            }
            throw error
        }
    }
}
