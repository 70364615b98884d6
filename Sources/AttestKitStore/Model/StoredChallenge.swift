public import AttestKit
public import Foundation

/// A one-time challenge: random bytes a client must sign over, with a time to live, a purpose and
/// optionally the key and the app it is meant for.
///
/// Issue one with ``ChallengeStore/issueChallenge(purpose:keyID:appID:ttl:byteCount:now:using:)`` and consume it
/// exactly once with ``ChallengeStore/consumeChallenge(_:purpose:keyID:now:)``. The ``description``
/// leaves out the challenge bytes.
public struct StoredChallenge: Sendable, Hashable, CustomStringConvertible {
    /// The identifier the client sends back.
    public let id: ChallengeID
    /// The random challenge bytes (32 or more).
    public let bytes: [UInt8]
    /// What the challenge may be used for.
    public let purpose: ChallengePurpose
    /// The key the challenge is bound to, or `nil` for any key (an attestation's challenge).
    public let keyID: KeyID?
    /// The app an attest challenge was issued for, as its RP ID hash (SHA-256 of the App ID, what its attestation
    /// carries: `AppID.rpIDHash`), or `nil` for any app. The attestation registered with the challenge must be the
    /// app's.
    public let rpIDHash: [UInt8]?
    /// When the challenge was issued, to the millisecond.
    public let createdAt: Date
    /// From this instant on the challenge is refused as expired.
    public let expiresAt: Date
    /// When the challenge was consumed, or `nil` while it is still usable.
    public let consumedAt: Date?

    /// Creates a challenge from its parts, checking every bound of ``StoreLimits``.
    /// - Throws: ``StoreError/Code/invalidInput`` when the bytes are too few or too many, a time is out of
    ///   range, the challenge would expire before it was created, or `rpIDHash` is not 32 bytes.
    public init(
        id: ChallengeID,
        bytes: [UInt8],
        purpose: ChallengePurpose,
        keyID: KeyID?,
        rpIDHash: [UInt8]? = nil,
        createdAt: Date,
        expiresAt: Date,
        consumedAt: Date? = nil
    ) throws(StoreError) {
        guard (StoreLimits.minimumChallengeBytes...StoreLimits.maximumChallengeBytes).contains(bytes.count) else {
            throw StoreError(
                .invalidInput,
                "a challenge has \(StoreLimits.minimumChallengeBytes) to \(StoreLimits.maximumChallengeBytes) bytes")
        }
        let created = try StoreTime.milliseconds(createdAt, "createdAt")
        let expires = try StoreTime.milliseconds(expiresAt, "expiresAt")
        guard expires > created else {
            throw StoreError(.invalidInput, "a challenge must expire after it is created")
        }
        guard rpIDHash.map({ $0.count == 32 }) ?? true else {
            throw StoreError(.invalidInput, "a challenge's app is the 32-byte SHA-256 of its App ID")
        }
        self.id = id
        self.bytes = bytes
        self.purpose = purpose
        self.keyID = keyID
        self.rpIDHash = rpIDHash
        self.createdAt = StoreTime.date(created)
        self.expiresAt = StoreTime.date(expires)
        self.consumedAt = try StoreTime.normalized(ifPresent: consumedAt, "consumedAt")
    }

    /// A fresh challenge of `byteCount` random bytes that lives for `ttl` from `now`.
    /// - Throws: ``StoreError/Code/invalidInput`` when `ttl` is not between 1 ms and one day or
    ///   `byteCount` is outside ``StoreLimits``.
    public static func random(
        purpose: ChallengePurpose,
        keyID: KeyID? = nil,
        rpIDHash: [UInt8]? = nil,
        ttl: Duration,
        byteCount: Int = StoreLimits.minimumChallengeBytes,
        now: Date,
        using generator: inout some RandomNumberGenerator
    ) throws(StoreError) -> StoredChallenge {
        let ttlMilliseconds = try StoreTime.milliseconds(
            ttl, in: 1...StoreLimits.maximumChallengeTTLMilliseconds, "the challenge time to live")
        guard (StoreLimits.minimumChallengeBytes...StoreLimits.maximumChallengeBytes).contains(byteCount) else {
            throw StoreError(
                .invalidInput,
                "a challenge has \(StoreLimits.minimumChallengeBytes) to \(StoreLimits.maximumChallengeBytes) bytes")
        }
        let created = try StoreTime.milliseconds(now, "now")
        return try StoredChallenge(
            id: .random(using: &generator),
            bytes: RandomBytes.make(count: byteCount, using: &generator),
            purpose: purpose,
            keyID: keyID,
            rpIDHash: rpIDHash,
            createdAt: StoreTime.date(created),
            expiresAt: StoreTime.date(created + ttlMilliseconds))
    }

    /// This challenge marked as consumed at `instant`.
    func consumed(at instant: Date) -> StoredChallenge {
        StoredChallenge(copying: self, consumedAt: instant)
    }

    /// This challenge as it was before it was consumed.
    func released() -> StoredChallenge {
        StoredChallenge(copying: self, consumedAt: nil)
    }

    private init(copying other: StoredChallenge, consumedAt: Date?) {
        self.id = other.id
        self.bytes = other.bytes
        self.purpose = other.purpose
        self.keyID = other.keyID
        self.rpIDHash = other.rpIDHash
        self.createdAt = other.createdAt
        self.expiresAt = other.expiresAt
        self.consumedAt = consumedAt
    }

    /// Whether the challenge has expired at `instant`.
    public func isExpired(at instant: Date) -> Bool { instant >= expiresAt }

    /// The identifier, purpose and times; never the challenge bytes, the key or the app.
    public var description: String {
        var text = "StoredChallenge(id: \(id), purpose: \(purpose), expiresAt: \(expiresAt)"
        if keyID != nil { text += ", bound to a key" }
        if rpIDHash != nil { text += ", bound to an app" }
        if let consumedAt { text += ", consumedAt: \(consumedAt)" }
        return text + ")"
    }

    /// Checks a consumed challenge against what the caller expected, after the one statement that
    /// consumed it; the challenge stays consumed either way.
    func checkUse(purpose expected: ChallengePurpose, keyID expectedKey: KeyID?) throws(StoreError) {
        guard purpose == expected else {
            throw StoreError(
                .challengePurposeMismatch, "the challenge was issued for \(purpose), not \(expected)")
        }
        if let keyID, keyID != expectedKey {
            throw StoreError(.challengeKeyMismatch, "the challenge is bound to another key")
        }
    }

    /// The reason a challenge that the consuming statement left alone was refused at `now`.
    static func refusal(for existing: StoredChallenge?, now: Date) -> StoreError {
        guard let existing else {
            return StoreError(.challengeNotFound, "no challenge has this identifier")
        }
        if existing.consumedAt != nil {
            return StoreError(.challengeConsumed, "the challenge was already used")
        }
        if existing.isExpired(at: now) {
            return StoreError(.challengeExpired, "the challenge has expired")
        }
        return StoreError(.challengeConsumed, "the challenge was used concurrently")
    }
}

/// What a challenge may be used for: one attestation, or one assertion.
///
/// A challenge issued for one purpose is refused for the other with
/// ``StoreError/Code/challengePurposeMismatch``, so an attestation challenge can never stand in for an
/// assertion's.
public struct ChallengePurpose: Sendable, Hashable, CustomStringConvertible {
    /// The stable name stored in the database: `attest` or `assert`.
    public let rawValue: String

    private init(unchecked rawValue: String) {
        self.rawValue = rawValue
    }

    /// The purpose with this stored name.
    /// - Throws: ``StoreError/Code/invalidInput`` for a name other than `attest` or `assert`.
    public init(rawValue: String) throws(StoreError) {
        guard let match = Self.allCases.first(where: { $0.rawValue == rawValue }) else {
            throw StoreError(.invalidInput, "a challenge purpose is attest or assert")
        }
        self = match
    }

    /// A challenge for `attestKey`: the server consumes it when the attestation arrives.
    public static let attest = ChallengePurpose(unchecked: "attest")
    /// A challenge for `generateAssertion`: the server consumes it with the assertion.
    public static let assert = ChallengePurpose(unchecked: "assert")

    /// Both purposes.
    public static let allCases: [ChallengePurpose] = [.attest, .assert]

    public var description: String { rawValue }
}
