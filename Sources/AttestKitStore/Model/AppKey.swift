public import Crypto

/// A key the app holds beside its App Attest key, bound to it by a key attestation: a P-256 public key, kept as
/// its SubjectPublicKeyInfo DER.
///
/// ``init(subjectPublicKeyInfo:)`` is strict: exactly the 91 bytes of a P-256 key with an uncompressed point (the
/// form CryptoKit's `derRepresentation` writes), parsed with swift-crypto, and written back to the same bytes, so
/// one key has one encoding and nothing else reaches a database. Compressed points, other curves, RSA, truncated
/// or trailing bytes are refused. Keys compare by their DER.
public struct AppKey: Sendable, Hashable {
    /// The length of a P-256 SubjectPublicKeyInfo DER with an uncompressed point.
    public static let derLength = 91

    /// The SubjectPublicKeyInfo DER.
    public let der: [UInt8]
    /// The public key (usable for signature checks; the same point serves `P256.KeyAgreement`).
    public let publicKey: P256.Signing.PublicKey

    /// Parses an app key.
    /// - Throws: ``StoreError/Code/invalidInput`` unless `subjectPublicKeyInfo` is the canonical DER of a P-256
    ///   public key.
    public init(subjectPublicKeyInfo: some Collection<UInt8>) throws(StoreError) {
        // Bounded before any parser sees it.
        guard subjectPublicKeyInfo.count == Self.derLength else {
            throw StoreError(.invalidInput, "an app key is the \(Self.derLength)-byte DER of a P-256 public key")
        }
        let der = Array(subjectPublicKeyInfo)
        guard let key = try? P256.Signing.PublicKey(derRepresentation: der), key.derRepresentation.elementsEqual(der)
        else {
            throw StoreError(.invalidInput, "an app key is the canonical DER of a P-256 public key")
        }
        self.der = der
        self.publicKey = key
    }

    /// Keys are equal when their DER is.
    public static func == (lhs: AppKey, rhs: AppKey) -> Bool { lhs.der == rhs.der }

    /// Hashes the DER, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(der) }
}
