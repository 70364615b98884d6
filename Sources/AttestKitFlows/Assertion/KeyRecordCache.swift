import AttestKit
import AttestKitStore
import Foundation

/// The store as an ``AssertionGate`` reads it: the keys it has read are kept, so that their assertions are verified
/// without a read of the store first.
///
/// Only what never changes is taken from it: the public key and App ID an assertion is verified with (a key is
/// never re-registered under its identifier). Its counter serves as a first check only; the store's
/// compare-and-set decides, together with the key's state, so a stale entry can never let a replay or a revoked
/// key through: at worst it costs a signature check before the store refuses. Only active keys are kept; a key the
/// store says is revoked or gone when its counter is advanced is forgotten. Bounded (4,096 keys, oldest first); an
/// evicted key costs its next assertion one read.
struct KeyRecordCache: DecisionStore {
    /// The store read through.
    let store: any AttestationStore
    private let records = BoundedCache<KeyID, KeyRecord>(capacity: 4_096)

    /// A cache over `store`.
    init(store: any AttestationStore) {
        self.store = store
    }

    /// The key kept for `keyID`, or the store's (kept when active).
    func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
        if let cached = records[keyID] { return cached }
        let mark = records.removals
        let found = try await store.keyWithoutReceipt(keyID)
        if let found, found.state == .active { records.insert(found, for: keyID, unlessRemovedSince: mark) }
        return found
    }

    /// Forgets the key kept for `keyID`, if any, with its parsed public key: its next read is the store's. A read
    /// or advance of the key that was under way keeps what it read from being kept again.
    func forget(_ keyID: KeyID) {
        if let record = records[keyID] { PublicKeyCache.shared.forget(x963: record.publicKeyX963) }
        records.remove(keyID)
    }

    /// The store's counter advance; the advanced key replaces the one kept, and a key the store says is revoked,
    /// expired or gone is forgotten.
    func advanceCounter(
        of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
    ) async throws(StoreError) -> KeyRecord {
        let mark = records.removals
        do {
            let advanced = try await store.advanceCounter(of: keyID, to: counter, now: now, usedSince: usedSince)
            records.insert(advanced, for: keyID, unlessRemovedSince: mark)
            return advanced
        } catch {
            if [.keyRevoked, .keyNotFound, .keyExpired].contains(error.code) { forget(keyID) }
            throw error
        }
    }

    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge {
        try await store.consumeChallenge(id, purpose: purpose, keyID: keyID, now: now)
    }

    func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
        try await store.registerKey(registration, now: now)
    }

    func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
        try await store.releaseChallenge(challenge)
    }
}
