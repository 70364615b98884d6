import AttestKit
import AttestKitStore
import Foundation

/// The store as a decision (``AssertionGate``, ``AttestationRegistrar``) sees it: the four calls they make.
///
/// A decision is written against this and nothing else, so that what wraps it (the gate's cache of keys, a
/// recorder noting the store's answers) is a store of its own and the decision carries no parameter for it.
protocol DecisionStore: Sendable {
    /// Consumes a one-time challenge (``ChallengeStore/consumeChallenge(_:purpose:keyID:now:)``).
    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge

    /// The key `keyID` without its receipt's bytes, or `nil` (``KeyStore/keyWithoutReceipt(_:)``).
    func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord?

    /// Advances a key's counter unless it expired (``KeyStore/advanceCounter(of:to:now:usedSince:)``).
    func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord

    /// Stores a verified key (``KeyStore/registerKey(_:now:)``).
    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord

    /// Undoes a consumption of this decision (``ChallengeStore/releaseChallenge(_:)``).
    func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError)
}

/// An ``AttestationStore`` itself, as a decision sees it.
struct DirectDecisionStore: DecisionStore {
    /// The store.
    let store: any AttestationStore

    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        try await store.consumeChallenge(id, purpose: purpose, keyID: keyID, now: now)
    }

    func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        try await store.keyWithoutReceipt(keyID)
    }

    func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord {
        try await store.advanceCounter(of: keyID, to: counter, now: now, usedSince: usedSince)
    }

    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        try await store.registerKey(registration, now: now)
    }

    func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        try await store.releaseChallenge(challenge)
    }
}
