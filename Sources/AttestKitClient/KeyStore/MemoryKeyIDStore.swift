import Foundation

/// A ``KeyIDStore`` in memory: forgotten when the process ends. For tests and previews.
public final class MemoryKeyIDStore: KeyIDStore, @unchecked Sendable {
    // NSLock rather than `Mutex`: the client builds for iOS 14, `Mutex` needs iOS 18.
    private let lock = NSLock()
    private var state: KeyState?

    /// Creates a store, optionally holding the registered key `keyID`.
    public init(_ keyID: String? = nil) { self.state = keyID.map(KeyState.registered) }

    /// Creates a store holding `state`.
    public init(state: KeyState?) { self.state = state }

    /// `memory:` and this object's address.
    public var identity: String { "memory:\(ObjectIdentifier(self).hashValue)" }

    /// The stored state.
    public func load() -> KeyState? { locked { state } }
    /// Stores `state`.
    public func save(_ state: KeyState) { locked { self.state = state } }
    /// Forgets the state.
    public func remove() { locked { state = nil } }

    /// The registered key's identifier, if the stored state is a registered key.
    public var registeredKeyID: String? {
        locked { state?.stage == .registered ? state?.keyID : nil }
    }

    private func locked<Value>(_ body: () -> Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
