/// `POST /v1/attestations` request; the answer is a ``KeyRecordResponse``.
public struct AttestationRequest: Codable, Sendable, Hashable {
    /// The App Attest key id (SHA-256 of the public key), Base64.
    public var keyId: String
    /// The CBOR attestation object, Base64.
    public var attestation: String
    /// The id of the `attest` challenge whose SHA-256 the attestation signs.
    public var challengeId: String

    /// Creates a request.
    public init(keyId: String, attestation: String, challengeId: String) {
        self.keyId = keyId
        self.attestation = attestation
        self.challengeId = challengeId
    }
}
