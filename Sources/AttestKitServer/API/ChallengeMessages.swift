/// `POST /v1/challenges` request.
struct ChallengeRequest: Decodable {
    /// `attest` (default) or `assert`.
    var purpose: String?
    /// For `assert`: the key the challenge is bound to.
    var keyId: String?
}

/// `POST /v1/challenges` answer.
struct ChallengeResponse: Encodable {
    var challengeId: String
    var challenge: String
    var purpose: String
    var expiresAt: String
}
