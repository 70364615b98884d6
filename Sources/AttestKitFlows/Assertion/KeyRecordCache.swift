import AttestKit
import AttestKitStore

/// The keys an ``AssertionGate`` has read, so that their assertions are verified without a read of the store first.
///
/// Only what never changes is taken from it: the public key and App ID an assertion is verified with (a key is
/// never re-registered under its identifier). Its counter serves as a first check only; the store's
/// compare-and-set decides, together with the key's state, so a stale entry can never let a replay or a revoked
/// key through: at worst it costs a signature check before the store refuses. Bounded (4,096 keys, oldest first);
/// an evicted key costs its next assertion one read.
struct KeyRecordCache: Sendable {
    private let records = BoundedCache<KeyID, KeyRecord>(capacity: 4_096)

    /// The key last seen with `keyID`, or `nil`.
    subscript(keyID: KeyID) -> KeyRecord? { records[keyID] }

    /// Keeps `record`, replacing the one kept for its key.
    func insert(_ record: KeyRecord) { records.insert(record, for: record.keyID) }

    /// Forgets the key `keyID` (the store said it is revoked or gone).
    func remove(_ keyID: KeyID) { records.remove(keyID) }
}
