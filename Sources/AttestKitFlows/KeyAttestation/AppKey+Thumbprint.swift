public import AttestKitStore

extension AppKey {
    /// The RFC 7638 JWK thumbprint of the key: base64url (no padding) of SHA-256 over its canonical JWK members,
    /// computed as a session token key's `kid` is.
    public var thumbprint: String { P256JWK(publicKey).thumbprint }

    /// Parses an app key as a request carries it, with the flows' code.
    /// - Throws: `app_key_malformed` (400) unless `der` is the canonical DER of a P-256 public key.
    public init(request der: some Collection<UInt8>) throws(FlowError) {
        guard let key = try? AppKey(subjectPublicKeyInfo: der) else { throw FlowError.appKeyMalformed }
        self = key
    }
}
