import Foundation

/// The key stores in use by an ``AppAttestManager`` of this process, by ``KeyIDStore/identity``: a second manager
/// over the same store is refused, because two managers would each attest and count on their own.
enum KeyStoreClaims {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var claimed: Set<String> = []

    /// Claims `identity`; `false` when another manager holds it.
    static func claim(_ identity: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        return claimed.insert(identity).inserted
    }

    /// Releases `identity`.
    static func release(_ identity: String) {
        lock.lock()
        defer { lock.unlock() }
        claimed.remove(identity)
    }
}
