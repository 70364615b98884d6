import AttestKitWire
import Crypto

/// The JWK coordinates of a P-256 public key and its RFC 7638 thumbprint: a session token key's `kid`
/// (``TokenKey``) and an app key's thumbprint (`AppKey.thumbprint`), computed once.
struct P256JWK {
    /// base64url of the 32-byte x coordinate.
    let x: String
    /// base64url of the 32-byte y coordinate.
    let y: String
    /// base64url of SHA-256 over the key's canonical JWK members.
    let thumbprint: String

    init(_ publicKey: P256.Signing.PublicKey) {
        // X9.63 uncompressed: 0x04 || x (32 bytes) || y (32 bytes).
        let point = Array(publicKey.x963Representation)
        x = Base64URL.encode(point[1..<33])
        y = Base64URL.encode(point[33..<65])
        // RFC 7638 §3.2: the required members, in lexicographic order, without whitespace.
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        thumbprint = Base64URL.encode(SHA256.hash(data: Array(canonical.utf8)))
    }
}
