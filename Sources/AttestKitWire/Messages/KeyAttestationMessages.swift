/// `POST /v1/key-attestations` request: an App Attest attestation whose client data is a
/// ``KeyAttestationClientData`` binding `appKey` to the challenge. The answer is a ``KeyAttestationResponse``.
public struct KeyAttestationRequest: Codable, Sendable, Hashable {
    /// The App Attest key id (SHA-256 of the public key), Base64.
    public var keyId: String
    /// The CBOR attestation object, Base64.
    public var attestation: String
    /// The id of the `attest` challenge the client data names.
    public var challengeId: String
    /// The app key's SubjectPublicKeyInfo DER, Base64 (a P-256 public key).
    public var appKey: String

    /// Creates a request.
    public init(keyId: String, attestation: String, challengeId: String, appKey: String) {
        self.keyId = keyId
        self.attestation = attestation
        self.challengeId = challengeId
        self.appKey = appKey
    }
}

/// `POST /v1/key-attestations` answer (201): the registered key as `POST /v1/attestations` answers it, with
/// ``KeyRecordResponse/appKey`` present (and its certificate when the service has a CA).
public typealias KeyAttestationResponse = KeyRecordResponse

extension KeyRecordResponse {
    /// The app key bound to an App Attest key by a key attestation.
    public struct AppKey: Codable, Sendable, Hashable {
        /// The RFC 7638 JWK thumbprint of the app key: base64url without padding of SHA-256 over its canonical JWK
        /// (the same computation as a session token key's `kid`).
        public var thumbprint: String
        /// An X.509 certificate for the app key issued by the service's CA, DER, Base64; only in the answer of
        /// `POST /v1/key-attestations`, and only when the service has a CA configured.
        public var certificate: String?

        /// Creates the app key information.
        public init(thumbprint: String, certificate: String? = nil) {
            self.thumbprint = thumbprint
            self.certificate = certificate
        }
    }
}
