/// `POST /v1/challenges` request.
package struct ChallengeRequest: Decodable {
    /// `attest` (default) or `assert`.
    package var purpose: String?
    /// For `assert`: the key the challenge is bound to.
    package var keyId: String?
}

/// `POST /v1/challenges` answer.
package struct ChallengeResponse: Encodable {
    package var challengeId: String
    package var challenge: String
    package var purpose: String
    package var expiresAt: String

    package init(challengeId: String, challenge: String, purpose: String, expiresAt: String) {
        self.challengeId = challengeId
        self.challenge = challenge
        self.purpose = purpose
        self.expiresAt = expiresAt
    }
}
