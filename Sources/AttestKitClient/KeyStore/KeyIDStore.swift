/// Where ``AppAttestManager`` keeps the identifier of the attested key between launches.
///
/// Only the identifier is stored (the private key never leaves the Secure Enclave), and only once the service
/// has accepted the key's attestation, so a stored identifier always names a registered key. Use
/// `KeychainKeyIDStore` on Apple platforms, ``FileKeyIDStore`` or ``MemoryKeyIDStore`` elsewhere.
public protocol KeyIDStore: Sendable {
    /// The stored key identifier, or `nil` when none is stored.
    func load() throws -> String?
    /// Stores `keyID`, replacing any previous one.
    func save(_ keyID: String) throws
    /// Forgets the stored key identifier, if any.
    func remove() throws
}
