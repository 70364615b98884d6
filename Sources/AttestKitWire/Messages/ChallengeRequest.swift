/// `POST /v1/challenges` request. An empty body or `{}` asks for an attestation challenge.
public struct ChallengeRequest: Codable, Sendable, Hashable {
    /// `attest` (the default) or `assert`.
    public var purpose: String?
    /// For `assert`: the key the challenge is bound to, Base64.
    public var keyId: String?

    /// Creates a request.
    public init(purpose: String? = nil, keyId: String? = nil) {
        self.purpose = purpose
        self.keyId = keyId
    }
}
