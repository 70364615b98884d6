/// `POST /v1/challenges` answer.
public struct ChallengeResponse: Codable, Sendable, Hashable {
    /// The challenge's id: 16 random bytes, base64url without padding.
    public var challengeId: String
    /// The challenge: 32 random bytes, Base64. For an attestation, SHA-256 of these bytes is the client data hash.
    public var challenge: String
    /// `attest` or `assert`.
    public var purpose: String
    /// When the challenge expires (``APITime``).
    public var expiresAt: String

    /// Creates an answer.
    public init(challengeId: String, challenge: String, purpose: String, expiresAt: String) {
        self.challengeId = challengeId
        self.challenge = challenge
        self.purpose = purpose
        self.expiresAt = expiresAt
    }
}
