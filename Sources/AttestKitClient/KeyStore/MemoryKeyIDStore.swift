import Synchronization

/// A ``KeyIDStore`` in memory: forgotten when the process ends. For tests and previews.
public final class MemoryKeyIDStore: KeyIDStore {
    private let keyID: Mutex<String?>

    /// Creates a store, optionally holding `keyID`.
    public init(_ keyID: String? = nil) { self.keyID = Mutex(keyID) }

    /// The stored key identifier.
    public func load() -> String? { keyID.withLock { $0 } }
    /// Stores `keyID`.
    public func save(_ keyID: String) { self.keyID.withLock { $0 = keyID } }
    /// Forgets the key identifier.
    public func remove() { keyID.withLock { $0 = nil } }
}
