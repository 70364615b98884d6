/// `POST /v1/challenges` request. An empty body or `{}` asks for an attestation challenge.
public struct ChallengeRequest: Codable, Sendable, Hashable {
    /// `attest` (the default) or `assert`.
    public var purpose: String?
    /// The key the challenge is bound to, Base64: for `assert`, the key that asserts; for `attest`, the key the app
    /// generated and will attest (required while the server's attestation ramp is on, which admits or defers it).
    public var keyId: String?
    /// For `attest`: the App ID (`TEAMID.bundle.id`) to attest, one of the server's accepted apps; needed by the
    /// attestation ramp when the server accepts several.
    public var appId: String?

    /// Creates a request.
    public init(purpose: String? = nil, keyId: String? = nil, appId: String? = nil) {
        self.purpose = purpose
        self.keyId = keyId
        self.appId = appId
    }
}
