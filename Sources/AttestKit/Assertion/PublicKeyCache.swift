package import Crypto

/// A bounded process-wide cache of parsed P-256 public keys, keyed by their exact X9.63 bytes.
///
/// A registered key never changes, and every assertion it signs is checked against it: parsing its 65 bytes
/// (decoding the point and checking that it is on the curve) on every request costs a share of the signature
/// check itself. Looking the key up by its bytes returns the very value a parse would, so the cache changes no
/// verification result; the key's state (revocation) and counter are still decided by the store on every request.
///
/// The cache holds at most ``capacity`` keys and evicts the oldest first. A caller cannot choose what is cached
/// beyond keys it registered, and evicting only costs later calls one parse each.
package final class PublicKeyCache: Sendable {
    /// The cache shared by every verifier in the process.
    package static let shared = PublicKeyCache(capacity: 4_096)

    private let keys: BoundedCache<[UInt8], P256.Signing.PublicKey>

    /// Creates an empty cache.
    package init(capacity: Int) {
        self.keys = BoundedCache(capacity: capacity)
    }

    /// The most keys kept.
    package var capacity: Int { keys.capacity }

    /// The key `x963` encodes, from the cache when these exact bytes were seen.
    /// - Throws: What `P256.Signing.PublicKey(x963Representation:)` throws for bytes that are not a P-256 point.
    package func key(x963: [UInt8]) throws -> P256.Signing.PublicKey {
        if let cached = keys[x963] { return cached }
        let key = try P256.Signing.PublicKey(x963Representation: x963)
        keys.insert(key, for: x963)
        return key
    }

    /// Forgets the key `x963` encodes, if it is cached (a key deleted or revoked: its bytes leave the memory).
    package func forget(x963: [UInt8]) {
        keys.remove(x963)
    }

    /// Whether the key `x963` encodes is cached.
    package func holds(x963: [UInt8]) -> Bool {
        keys[x963] != nil
    }

    /// How many keys are cached.
    package var count: Int { keys.count }
}
