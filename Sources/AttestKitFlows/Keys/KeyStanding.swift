import AttestKit
public import AttestKitStore
public import Foundation

/// What a key must still be for what was derived from it to count (a session token, an app key certificate, a
/// message signed by its bound app key): active, accepted by the configuration (`apps`, `environments`), and, with
/// ``expiry``, not unused for longer. A key the ``AssertionGate`` would refuse at its next assertion is refused
/// through a credential it earned before as well, with the gate's code.
public struct KeyStanding: Sendable, Hashable {
    /// Seconds a key may go unused (`keys.expire-after`, as the ``AssertionGate``'s ``AssertionGate/keyExpiry``),
    /// or `nil` when keys never expire.
    public var expiry: TimeInterval?
    /// The apps and environments whose keys count (as the ``AssertionGate``'s ``AssertionGate/acceptance``), or
    /// `nil` to accept a key of any.
    public var acceptance: KeyAcceptance?

    /// Requires keys to stay active, accepted by `acceptance` and used within `expiry`.
    /// - Parameters:
    ///   - expiry: Seconds a key may go unused, or `nil` (the default) when keys never expire.
    ///   - acceptance: The apps and environments whose keys count, or `nil` (the default) for any.
    public init(expiry: TimeInterval? = nil, acceptance: KeyAcceptance? = nil) {
        self.expiry = expiry
        self.acceptance = acceptance
    }

    /// Refuses `record` when it no longer stands behind what it earned at `now`.
    /// - Throws: `key_revoked`, then `app_not_accepted` or `environment_not_accepted`, then `key_expired` (403).
    public func require(_ record: KeyRecord, at now: Date) throws(FlowError) {
        guard record.state == .active else { throw FlowError(StoreError.keyRevoked) }
        try acceptance?.check(record)
        if isExpired(record, at: now) { throw FlowError(StoreError.keyExpired) }
    }

    /// Whether `record` went unused for longer than ``expiry`` at `now` (never without one). An expiry that is not a
    /// number expires every key, as the ``AssertionGate`` refuses every assertion under it: fail closed.
    public func isExpired(_ record: KeyRecord, at now: Date) -> Bool {
        if let expiry, expiry.isNaN { return true }
        return record.isExpired(usedSince: expiry.map { now.addingTimeInterval(-$0) })
    }

    /// Refuses what was issued for `appID` (the `appId` of a session token bought without a key: with a debug or a
    /// DeviceCheck token) when ``acceptance`` no longer accepts that App ID, as a key of it would be refused.
    /// - Throws: `app_not_accepted` (403).
    public func requireApp(_ appID: String) throws(FlowError) {
        guard let acceptance else { return }
        guard let parsed = try? AppID(appID), acceptance.appIDs.contains(parsed) else {
            throw FlowError(
                .appNotAccepted, .refused, "issued for an App ID this service no longer accepts (apps)")
        }
    }

    /// Whether `record` stands at `now` (``require(_:at:)`` does not throw).
    public func holds(_ record: KeyRecord, at now: Date) -> Bool {
        (try? require(record, at: now)) != nil
    }
}
