import Crypto
import Foundation
import X509

/// A private key of the software Apple's hierarchies: P-384 for the roots and the attestation CA, P-256 for the
/// receipt CA, the receipt signer and device keys.
///
/// Keys are random, or derived from a seed so that a whole software Apple can be rebuilt identically. The raw
/// scalar is kept only to save test state; it never appears in a description.
enum SigningKey: Sendable {
    case p256(P256.Signing.PrivateKey)
    case p384(P384.Signing.PrivateKey)

    /// The curve of a key, as written in state files.
    enum Curve: String, Sendable, Codable {
        case p256 = "P-256"
        case p384 = "P-384"

        /// The length of a private scalar on this curve.
        var scalarLength: Int {
            switch self {
            case .p256: 32
            case .p384: 48
            }
        }
    }

    /// A fresh key from the system's secure random source.
    static func random(_ curve: Curve) -> SigningKey {
        switch curve {
        case .p256: .p256(P256.Signing.PrivateKey())
        case .p384: .p384(P384.Signing.PrivateKey())
        }
    }

    /// The key for `label`: derived from `seed` when one is given, else random.
    static func make(_ curve: Curve, label: String, seed: [UInt8]?) throws(SoftwareAppleError) -> SigningKey {
        guard let seed else { return .random(curve) }
        return try derived(curve, seed: seed, label: label)
    }

    /// The key derived from `seed` for `label`: SHA-512(seed ‖ label ‖ attempt) truncated to the scalar length,
    /// retried in the (negligible) case that it is not a valid scalar.
    static func derived(_ curve: Curve, seed: [UInt8], label: String) throws(SoftwareAppleError) -> SigningKey {
        for attempt in UInt8(0)..<16 {
            let digest = SHA512.hash(data: seed + Array(label.utf8) + [attempt])
            if let key = try? SigningKey(curve: curve, rawRepresentation: Array(digest.prefix(curve.scalarLength))) {
                return key
            }
        }
        throw SoftwareAppleError(.invalidState, "no valid \(curve.rawValue) key could be derived for \(label)")
    }

    /// A key drawn from `generator` (for repeatable simulations; never for real secrets).
    static func drawn(_ curve: Curve, using generator: inout some RandomNumberGenerator) -> SigningKey {
        for _ in 0..<16 {
            var raw = [UInt8]()
            while raw.count < curve.scalarLength {
                let word = generator.next()
                for shift in stride(from: 0, to: 64, by: 8) {
                    raw.append(UInt8(truncatingIfNeeded: word >> UInt64(shift)))
                }
            }
            if let key = try? SigningKey(curve: curve, rawRepresentation: Array(raw.prefix(curve.scalarLength))) {
                return key
            }
        }
        return .random(curve)
    }

    /// Restores a key from its raw scalar.
    init(curve: Curve, rawRepresentation raw: [UInt8]) throws {
        switch curve {
        case .p256: self = .p256(try P256.Signing.PrivateKey(rawRepresentation: raw))
        case .p384: self = .p384(try P384.Signing.PrivateKey(rawRepresentation: raw))
        }
    }

    var curve: Curve {
        switch self {
        case .p256: .p256
        case .p384: .p384
        }
    }

    /// The raw private scalar, for state files only.
    var rawRepresentation: [UInt8] {
        switch self {
        case .p256(let key): Array(key.rawRepresentation)
        case .p384(let key): Array(key.rawRepresentation)
        }
    }

    /// The key as swift-certificates signs with it.
    var certificateKey: Certificate.PrivateKey {
        switch self {
        case .p256(let key): Certificate.PrivateKey(key)
        case .p384(let key): Certificate.PrivateKey(key)
        }
    }

    /// The public half, for a certificate.
    var publicKey: Certificate.PublicKey {
        switch self {
        case .p256(let key): Certificate.PublicKey(key.publicKey)
        case .p384(let key): Certificate.PublicKey(key.publicKey)
        }
    }
}
