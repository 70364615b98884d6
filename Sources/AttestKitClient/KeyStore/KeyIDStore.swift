/// Where ``AppAttestManager`` keeps its ``KeyState`` between launches.
///
/// The private key never leaves the Secure Enclave: the state holds the key identifier and where the key is in its
/// life (generated, attested, registered), so that a relaunch resumes instead of attesting again. Use
/// `KeychainKeyIDStore` on Apple platforms, ``FileKeyIDStore`` or ``MemoryKeyIDStore`` elsewhere.
///
/// One manager per store: a second ``AppAttestManager`` over a store with the same ``identity`` in the same
/// process is refused (``AttestKitClientError/Code/keyStore``), since two managers would attest and count
/// separately.
public protocol KeyIDStore: Sendable {
    /// Names the place the state is kept (two stores with the same identity share it).
    var identity: String { get }
    /// The stored state, or `nil` when none is stored.
    func load() throws -> KeyState?
    /// Stores `state`, replacing any previous one.
    func save(_ state: KeyState) throws
    /// Forgets the stored state, if any.
    func remove() throws
}
