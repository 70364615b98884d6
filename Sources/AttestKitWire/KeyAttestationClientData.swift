import Crypto

/// The client data of an emulated key attestation: it binds a second, ordinary app key (for example a Secure
/// Enclave P-256 key) to an App Attest attestation, so that the server knows the key lives in a genuine instance
/// of the app.
///
/// The app builds these bytes for the challenge it received and its key's public part, passes SHA-256 of them
/// (``clientDataHash``) to `DCAppAttestService.attestKey(_:clientDataHash:)`, and sends the attestation with the
/// challenge id and the key (`POST /v1/key-attestations`). The server rebuilds the same bytes from the request; an
/// attestation made for another key or another challenge does not verify.
///
/// The bytes are UTF-8 text, three lines joined by a single line feed (`0x0A`), no trailing line feed:
///
/// ```text
/// attestkit-key-attestation-v1
/// Jx3kq0V9bT2mYc8rLw1pZA                  (the challenge id, as the server issued it)
/// MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE…   (base64url without padding of the app key's SubjectPublicKeyInfo DER)
/// ```
///
/// This type checks the form only (a challenge id, 1 to ``maximumAppKeyLength`` key bytes); the server also
/// requires the key to be a P-256 public key.
public struct KeyAttestationClientData: Sendable, Hashable {
    /// The first line, naming this format and its version.
    public static let version = "attestkit-key-attestation-v1"
    /// The longest app key accepted, in DER bytes (a P-256 key is 91).
    public static let maximumAppKeyLength = 1024

    /// The challenge id the server issued for this attestation (1 to 128 base64url characters).
    public let challengeId: String
    /// The app key's SubjectPublicKeyInfo, DER.
    public let appKey: [UInt8]

    /// Binds an app key to a challenge.
    ///
    /// - Parameters:
    ///   - challengeId: The challenge id, as the server issued it.
    ///   - appKey: The app key's SubjectPublicKeyInfo DER (CryptoKit's `derRepresentation` of a public key).
    /// - Throws: ``RequestBindingError`` (`invalid_freshness` for the challenge id, `invalid_app_key`) when a part
    ///   cannot be written unambiguously.
    public init(challengeId: String, appKey: some Collection<UInt8>) throws(RequestBindingError) {
        guard RequestBinding.isChallengeID(challengeId) else { throw RequestBindingError(.invalidFreshness) }
        guard (1...Self.maximumAppKeyLength).contains(appKey.count) else {
            throw RequestBindingError(.invalidAppKey)
        }
        self.challengeId = challengeId
        self.appKey = Array(appKey)
    }

    /// The client data bytes.
    public var clientData: [UInt8] {
        Array([Self.version, challengeId, Base64URL.encode(appKey)].joined(separator: "\n").utf8)
    }

    /// SHA-256 of ``clientData``: what the app passes to `attestKey` as `clientDataHash`.
    public var clientDataHash: [UInt8] { Array(SHA256.hash(data: clientData)) }

    /// Parses client data (for servers and tools that receive the raw bytes).
    /// - Throws: ``RequestBindingError`` unless `clientData` is exactly what ``clientData`` would produce.
    public init(clientData: some Collection<UInt8>) throws(RequestBindingError) {
        // The version line, a challenge id, base64url of the longest key, two line feeds.
        let longest = Self.version.utf8.count + 128 + (Self.maximumAppKeyLength * 4 + 2) / 3 + 2
        guard clientData.count <= longest else { throw RequestBindingError(.malformed) }
        let lines = clientData.split(separator: 0x0A, omittingEmptySubsequences: false)
        guard lines.count == 3, lines[0].elementsEqual(Self.version.utf8),
            let challengeId = RequestBinding.ascii(lines[1]),
            let keyText = RequestBinding.ascii(lines[2]),
            let appKey = Base64URL.decode(Substring(keyText))
        else {
            throw RequestBindingError(.malformed)
        }
        try self.init(challengeId: challengeId, appKey: appKey)
        guard self.clientData.elementsEqual(clientData) else { throw RequestBindingError(.malformed) }
    }
}
