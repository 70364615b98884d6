public import AttestKitWire
public import Crypto
import Foundation

/// A P-256 public key that verifies session tokens, with its key id (the RFC 7638 thumbprint of its JWK).
public struct TokenKey: Sendable {
    /// The public key.
    public let publicKey: P256.Signing.PublicKey
    /// The key id tokens name in their header: base64url of SHA-256 over the key's canonical JWK members.
    public let kid: String
    /// The key as the JWKS lists it.
    public let jwk: JSONWebKey

    /// The key for `publicKey`.
    public init(publicKey: P256.Signing.PublicKey) {
        self.publicKey = publicKey
        let members = P256JWK(publicKey)
        kid = members.thumbprint
        jwk = JSONWebKey(kty: "EC", crv: "P-256", x: members.x, y: members.y, kid: kid, use: "sig", alg: "ES256")
    }

    /// The key of a PEM: a P-256 public key (`PUBLIC KEY`) or private key (`PRIVATE KEY`, `EC PRIVATE KEY`), of
    /// which the public part is used.
    /// - Throws: `tokens_key_invalid` (not configured) when the PEM is neither.
    public init(pem: String) throws(FlowError) {
        if let key = try? P256.Signing.PublicKey(pemRepresentation: pem) {
            self.init(publicKey: key)
        } else if let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
            self.init(publicKey: key.publicKey)
        } else {
            throw FlowError(.tokensKeyInvalid, .notConfigured, "the token key is not a PEM P-256 key")
        }
    }
}

/// The P-256 private key that signs session tokens.
public struct TokenSigningKey: Sendable {
    /// The private key. Never logged.
    let privateKey: P256.Signing.PrivateKey
    /// Its public half, with the key id.
    public let key: TokenKey

    /// The signing key of `privateKey`.
    public init(privateKey: P256.Signing.PrivateKey) {
        self.privateKey = privateKey
        self.key = TokenKey(publicKey: privateKey.publicKey)
    }

    /// The signing key of a PEM P-256 private key (`PRIVATE KEY` PKCS #8 or `EC PRIVATE KEY` SEC 1).
    /// - Throws: `tokens_key_invalid` (not configured) otherwise.
    public init(pem: String) throws(FlowError) {
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: pem) else {
            throw FlowError(.tokensKeyInvalid, .notConfigured, "the token signing key is not a PEM P-256 private key")
        }
        self.init(privateKey: key)
    }

    /// This key's kid: `CustomStringConvertible` would risk printing the key, so only the id is exposed.
    public var kid: String { key.kid }
}
