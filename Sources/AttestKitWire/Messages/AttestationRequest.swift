/// `POST /v1/attestations` request; the answer is a ``KeyRecordResponse``.
public struct AttestationRequest: Codable, Sendable, Hashable {
    /// The App Attest key id (SHA-256 of the public key), Base64.
    public var keyId: String
    /// The CBOR attestation object, Base64.
    public var attestation: String
    /// The id of the `attest` challenge the attestation is made for.
    public var challengeId: String
    /// Optional: the exact bytes the app hashed for `attestKey`, Base64, when they are more than the challenge: the
    /// challenge's bytes followed by the app's own (``AttestationClientData``). Absent: the client data is the
    /// challenge alone (the app passed SHA-256 of the challenge).
    public var clientData: String?

    /// Creates a request.
    public init(keyId: String, attestation: String, challengeId: String, clientData: String? = nil) {
        self.keyId = keyId
        self.attestation = attestation
        self.challengeId = challengeId
        self.clientData = clientData
    }
}
