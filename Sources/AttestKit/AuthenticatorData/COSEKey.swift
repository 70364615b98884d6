/// The credential public key of an attestation's authenticator data: a COSE_Key for ECDSA P-256.
///
/// App Attest writes exactly `{1: 2, 3: -7, -1: 1, -2: x, -3: y}` (key type EC2, algorithm ES256,
/// curve P-256). Anything else is rejected. This type only carries the coordinates: it does not
/// check that they form a point on the curve. The verifier takes the key from the credential
/// certificate and compares this one with it byte for byte (`credential_id_mismatch` when they differ).
public struct COSEKey: Sendable, Hashable {
    /// The x coordinate, 32 bytes big-endian.
    public let x: [UInt8]
    /// The y coordinate, 32 bytes big-endian.
    public let y: [UInt8]

    /// The 65-byte X9.62 uncompressed point `04 ‖ x ‖ y`, the form App Attest key identifiers hash.
    public var x963Representation: [UInt8] { [0x04] + x + y }

    /// The length of one P-256 coordinate.
    private static let coordinateLength = 32

    /// Parses a decoded COSE_Key map.
    ///
    /// A coordinate may arrive shorter than 32 bytes when its leading bytes are zero (real keys with
    /// a 31-byte coordinate exist); it is left-padded with zeros.
    /// - Throws: ``AttestKitError/Code/authenticatorDataMalformed`` unless `value` is exactly an
    ///   EC2/ES256/P-256 key map with 1 to 32 byte coordinates.
    package init(_ value: CBORValue) throws(AttestKitError) {
        guard let entries = value.mapValue else {
            throw AttestKitError(
                .authenticatorDataMalformed, "the credential public key is a \(value.kindName), not a map")
        }
        guard entries.count == 5 else {
            throw AttestKitError(
                .authenticatorDataMalformed, "the credential public key has \(entries.count) entries, not 5")
        }
        // The reader guarantees unique keys, so five entries with these five keys leave room for nothing else.
        guard value[int: 1] == .integer(2) else {
            throw AttestKitError(.authenticatorDataMalformed, "the credential public key is not of key type EC2")
        }
        guard value[int: 3] == .integer(-7) else {
            throw AttestKitError(.authenticatorDataMalformed, "the credential public key is not for ES256")
        }
        guard value[int: -1] == .integer(1) else {
            throw AttestKitError(.authenticatorDataMalformed, "the credential public key is not on P-256")
        }
        self.x = try Self.coordinate(value[int: -2], name: "x")
        self.y = try Self.coordinate(value[int: -3], name: "y")
    }

    /// A 1 to 32 byte coordinate, left-padded with zeros to 32 bytes.
    private static func coordinate(_ value: CBORValue?, name: String) throws(AttestKitError) -> [UInt8] {
        guard let bytes = value?.bytesValue else {
            throw AttestKitError(.authenticatorDataMalformed, "the credential public key lacks a byte string \(name)")
        }
        guard (1...coordinateLength).contains(bytes.count) else {
            throw AttestKitError(
                .authenticatorDataMalformed, "the credential public key's \(name) has \(bytes.count) bytes")
        }
        return [UInt8](repeating: 0, count: coordinateLength - bytes.count) + bytes
    }
}
