public import AttestKitStore
public import Foundation

extension KeyRecord {
    /// Refuses a key that no longer stands behind what was derived from it (a session token, an app key
    /// certificate, a message signed by its bound app key): revoked, or, with `keyExpiry`, unused for longer than
    /// that at `now`, so that a key the ``AssertionGate`` would refuse as `key_expired` is not honoured through a
    /// credential it earned before.
    /// - Parameters:
    ///   - keyExpiry: Seconds a key may go unused (`keys.expire-after`), or `nil` when keys never expire.
    ///   - now: The time of the check.
    /// - Throws: `key_revoked` or `key_expired`.
    public func requireStanding(keyExpiry: TimeInterval?, at now: Date) throws(StoreError) {
        guard state == .active else { throw StoreError.keyRevoked }
        if isExpired(usedSince: keyExpiry.map { now.addingTimeInterval(-$0) }) { throw StoreError.keyExpired }
    }
}
