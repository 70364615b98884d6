import Crypto

/// What the app signed: either the data itself, which the verifier hashes with SHA-256, or the
/// exact hash bytes the app passed to `attestKey` / `generateAssertion`.
///
/// Apple documents `clientDataHash = SHA-256(challenge)` for attestations, but Apple's own samples pass
/// the raw challenge bytes as the hash. Use ``challenge(_:)`` (or ``clientData(_:)``) for the documented
/// rule, and ``clientDataHash(_:)`` when the app passes bytes of its own making.
public enum ClientDataInput: Sendable, Hashable {
    /// The raw client data (or, for attestations, the challenge); hashed with SHA-256.
    case clientData([UInt8])
    /// The exact bytes the app passed as `clientDataHash`, used as they are.
    case clientDataHash([UInt8])

    /// An attestation challenge; the app passed SHA-256(challenge) to `attestKey`.
    public static func challenge(_ challenge: [UInt8]) -> ClientDataInput { .clientData(challenge) }

    /// The largest input accepted, in bytes.
    public static let maximumLength = 64 * 1024

    /// The bytes the authenticator appended to its authenticator data.
    package func hash() throws(AttestKitError) -> [UInt8] {
        switch self {
        case .clientData(let data):
            guard data.count <= Self.maximumLength else {
                throw AttestKitError(.inputTooLarge, "client data is over \(Self.maximumLength) bytes")
            }
            return Array(SHA256.hash(data: data))
        case .clientDataHash(let hash):
            guard !hash.isEmpty, hash.count <= 1024 else {
                throw AttestKitError(.clientDataHashMalformed, "a client data hash has 1 to 1024 bytes")
            }
            return hash
        }
    }
}
