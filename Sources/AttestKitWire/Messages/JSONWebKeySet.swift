/// `GET /.well-known/jwks.json` answer: the public keys that verify AttestKit session tokens (RFC 7517), the
/// current signing key first, then the previous ones kept for rotation.
public struct JSONWebKeySet: Codable, Sendable, Hashable {
    /// The keys.
    public var keys: [JSONWebKey]

    /// Creates a key set.
    public init(keys: [JSONWebKey]) {
        self.keys = keys
    }
}

/// One P-256 public key of a ``JSONWebKeySet``.
public struct JSONWebKey: Codable, Sendable, Hashable {
    /// `EC`.
    public var kty: String
    /// `P-256`.
    public var crv: String
    /// The x coordinate, base64url without padding (32 bytes).
    public var x: String
    /// The y coordinate, base64url without padding (32 bytes).
    public var y: String
    /// The key id: the RFC 7638 thumbprint (SHA-256, base64url) of the key, which tokens name in their header.
    public var kid: String
    /// `sig`.
    public var use: String
    /// `ES256`.
    public var alg: String

    /// Creates a key.
    public init(kty: String, crv: String, x: String, y: String, kid: String, use: String, alg: String) {
        self.kty = kty
        self.crv = crv
        self.x = x
        self.y = y
        self.kid = kid
        self.use = use
        self.alg = alg
    }
}
