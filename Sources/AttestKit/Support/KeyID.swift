public import Crypto

/// An App Attest key identifier: SHA-256 of the key's X9.63 uncompressed public point (32 bytes).
///
/// `DCAppAttestService.generateKey()` hands it to the app as standard Base64 (44 characters).
/// ``init(string:)`` also accepts base64url and missing padding; comparisons are on the decoded
/// bytes and run in constant time.
public struct KeyID: Sendable, Hashable, CustomStringConvertible {
    /// The 32 identifier bytes.
    public let bytes: [UInt8]

    /// Creates a key identifier from its 32 bytes.
    /// - Throws: ``AttestKitError/Code/keyIdMalformed`` unless exactly 32 bytes are given.
    public init(bytes: some Collection<UInt8>) throws(AttestKitError) {
        guard bytes.count == 32 else {
            throw AttestKitError(.keyIdMalformed, "a key identifier has 32 bytes, got \(bytes.count)")
        }
        self.bytes = Array(bytes)
    }

    /// Decodes a key identifier from standard Base64 or base64url, padded or not.
    /// - Throws: ``AttestKitError/Code/keyIdMalformed`` when the text is not Base64 of 32 bytes.
    public init(string: some StringProtocol) throws(AttestKitError) {
        guard string.utf8.count <= 64, let decoded = Base64.decode(string) else {
            throw AttestKitError(.keyIdMalformed, "the key identifier is not Base64 or base64url")
        }
        try self.init(bytes: decoded)
    }

    /// The key identifier of a P-256 public key: SHA-256 of its 65-byte X9.63 representation.
    public init(publicKey: P256.Signing.PublicKey) {
        self.bytes = Array(SHA256.hash(data: publicKey.x963Representation))
    }

    /// Standard padded Base64, the form `generateKey()` returns.
    public var base64: String { Base64.encode(bytes) }

    /// The same as ``base64``.
    public var description: String { base64 }

    /// Compares the 32 bytes in constant time.
    public static func == (lhs: KeyID, rhs: KeyID) -> Bool {
        ConstantTime.equal(lhs.bytes, rhs.bytes)
    }

    /// Hashes the bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
