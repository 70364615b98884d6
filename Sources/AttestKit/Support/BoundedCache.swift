import Synchronization

/// A thread-safe cache that holds at most ``capacity`` values and evicts the oldest insertion first (a ring of
/// slots). Used where a lookup returns exactly what the slow path would (parsed keys, a key's immutable facts), so
/// the cache changes no result and an eviction only costs the next lookup the slow path.
package final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    /// The most values kept.
    package let capacity: Int
    private let state = Mutex<State>(State())

    private struct State: ~Copyable {
        /// The values, each with the slot of the ring that holds its key.
        var entries: [Key: (value: Value, slot: Int)] = [:]
        /// The ring of keys in insertion order; a removed key's slot stays until it is reused.
        var slots: [Key] = []
        /// The slot the next insertion takes once the ring is full.
        var oldest = 0
        /// How many times ``BoundedCache/remove(_:)`` was called.
        var removals = 0
    }

    /// Creates an empty cache of at most `capacity` values (at least 1).
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// The value cached for `key`, or `nil`.
    package subscript(key: Key) -> Value? {
        state.withLock { $0.entries[key]?.value }
    }

    /// How many times ``remove(_:)`` has been called: a mark for ``insert(_:for:unlessRemovedSince:)``.
    package var removals: Int { state.withLock { $0.removals } }

    /// Caches `value` for `key`, replacing the value already cached for it (which keeps its place in the ring).
    package func insert(_ value: Value, for key: Key) {
        state.withLock { state in Self.insert(value, for: key, into: &state, capacity: capacity) }
    }

    /// Caches `value` for `key` as ``insert(_:for:)`` does, unless a value was removed since `removals` was read
    /// (any key's): a value read from its source before a removal, and cached after it, would bring back what the
    /// removal meant to drop.
    package func insert(_ value: Value, for key: Key, unlessRemovedSince removals: Int) {
        state.withLock { state in
            guard state.removals == removals else { return }
            Self.insert(value, for: key, into: &state, capacity: capacity)
        }
    }

    private static func insert(_ value: Value, for key: Key, into state: inout State, capacity: Int) {
        // One lookup for a key already cached (the assertion path re-inserts its key after every advance).
        if let index = state.entries.index(forKey: key) {
            state.entries.values[index].value = value
            return
        }
        let slot: Int
        if state.slots.count < capacity {
            slot = state.slots.count
            state.slots.append(key)
        } else {
            slot = state.oldest
            let evicted = state.slots[slot]
            if state.entries[evicted]?.slot == slot { state.entries[evicted] = nil }
            state.slots[slot] = key
            state.oldest = (slot + 1) % capacity
        }
        state.entries[key] = (value, slot)
    }

    /// Forgets the value cached for `key`, if any.
    package func remove(_ key: Key) {
        state.withLock { state in
            state.removals &+= 1
            _ = state.entries.removeValue(forKey: key)
        }
    }

    /// How many values are cached.
    package var count: Int { state.withLock { $0.entries.count } }
}
