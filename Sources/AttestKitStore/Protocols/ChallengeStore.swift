public import AttestKit
public import Foundation

/// Where one-time challenges live: issued, consumed exactly once, deleted once expired.
///
/// One of the small protocols ``AttestationStore`` composes; a flow that only issues and consumes challenges
/// needs only this one. Consuming is atomic: of many concurrent consumers of one challenge, in one process or across
/// replicas, exactly one wins.
public protocol ChallengeStore: Sendable {
    /// Stores a new challenge, as built by ``StoredChallenge/random(purpose:keyID:rpIDHash:ttl:byteCount:now:using:)``.
    /// Prefer ``issueChallenge(purpose:keyID:appID:ttl:byteCount:now:using:)``, which does both.
    /// - Throws: ``StoreError/Code/invalidInput`` for a consumed challenge or a reused identifier.
    func insertChallenge(_ challenge: StoredChallenge) async throws(StoreError)

    /// Consumes a challenge exactly once, atomically, and returns it.
    ///
    /// One statement marks the challenge consumed if it exists, is not consumed and has not expired at `now`.
    /// The purpose and key binding are checked after: a mismatch is refused, and the challenge stays consumed.
    /// - Parameters:
    ///   - id: The identifier the client sent back.
    ///   - purpose: What the caller is about to verify.
    ///   - keyID: The key the request is for, or `nil` (an attestation, before the key is registered).
    ///   - now: The time of the request.
    /// - Throws: ``StoreError/Code/challengeNotFound``, ``StoreError/Code/challengeExpired``,
    ///   ``StoreError/Code/challengeConsumed``, ``StoreError/Code/challengePurposeMismatch``,
    ///   ``StoreError/Code/challengeKeyMismatch``.
    func consumeChallenge(
        _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
    ) async throws(StoreError) -> StoredChallenge

    /// Deletes every challenge that expired at or before `now`, consumed or not, and returns how many.
    func deleteExpiredChallenges(now: Date) async throws(StoreError) -> Int
    /// Undoes the consumption `challenge` records (``StoredChallenge/consumedAt``, as
    /// ``consumeChallenge(_:purpose:keyID:now:)`` returned it), so that the challenge can be consumed again: for a
    /// refusal that is not about what was verified with it (an attestation ramp or a budget saying "not now"), so
    /// that the client's later post of the same attestation can still succeed. Only that very consumption is undone;
    /// a challenge consumed at another moment, or deleted, is left as it is. The default does nothing: the challenge
    /// stays consumed.
    func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError)
}

extension ChallengeStore {
    /// Leaves the challenge consumed (a store that cannot undo a consumption).
    public func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError) {}
}

extension ChallengeStore {
    /// Issues a challenge of `byteCount` random bytes from `generator`, valid for `ttl` from `now`.
    ///
    /// - Parameters:
    ///   - purpose: ``ChallengePurpose/attest`` or ``ChallengePurpose/assert``.
    ///   - keyID: The key the challenge is for, or `nil` for any.
    ///   - appID: The app an attest challenge is for (``StoredChallenge/rpIDHash``), or `nil` for any.
    ///   - ttl: How long the challenge lives: between 1 ms and one day.
    ///   - byteCount: The number of random bytes, 32 to 1024.
    ///   - now: The time of issue.
    ///   - generator: The source of randomness.
    /// - Throws: ``StoreError/Code/invalidInput`` for a bound outside ``StoreLimits``.
    public func issueChallenge(
        purpose: ChallengePurpose,
        keyID: KeyID? = nil,
        appID: AppID? = nil,
        ttl: Duration = .seconds(300),
        byteCount: Int = StoreLimits.minimumChallengeBytes,
        now: Date,
        using generator: inout some RandomNumberGenerator
    ) async throws(StoreError) -> StoredChallenge {
        let challenge = try StoredChallenge.random(
            purpose: purpose, keyID: keyID, rpIDHash: appID?.rpIDHash, ttl: ttl, byteCount: byteCount, now: now,
            using: &generator)
        try await insertChallenge(challenge)
        return challenge
    }

    /// Issues a challenge with the system's secure random number generator.
    /// - Throws: ``StoreError/Code/invalidInput`` for a bound outside ``StoreLimits``.
    public func issueChallenge(
        purpose: ChallengePurpose,
        keyID: KeyID? = nil,
        appID: AppID? = nil,
        ttl: Duration = .seconds(300),
        byteCount: Int = StoreLimits.minimumChallengeBytes,
        now: Date
    ) async throws(StoreError) -> StoredChallenge {
        var generator = SystemRandomNumberGenerator()
        return try await issueChallenge(
            purpose: purpose, keyID: keyID, appID: appID, ttl: ttl, byteCount: byteCount, now: now,
            using: &generator)
    }
}
