public import Foundation

/// Where the operator dashboard's browser sessions live, so that every replica on one database honours a session
/// another opened, and a logout on one ends it on all.
///
/// One of the small protocols ``AttestationStore`` composes. A session is kept as a digest only (the dashboard keeps
/// an HMAC-SHA256 of its cookie value, keyed by the admin token the login presented,
/// ``StoreLimits/dashboardSessionDigestBytes`` bytes), never the cookie itself, with its expiry. A digest is looked
/// up by equality, as a primary key: it is the HMAC of a 256-bit random value under a secret key, so a lookup's
/// timing tells nothing a guess could use.
public protocol DashboardSessionStore: Sendable {
    /// Opens a session: stores `digest` until `expiresAt`, and keeps the store bounded in the same transaction: the
    /// sessions expired at `now` are deleted, then, past `capacity` live sessions, the oldest others (by opening
    /// time), so that a flood of logins cannot grow the store.
    /// - Parameters:
    ///   - digest: The session's digest, ``StoreLimits/dashboardSessionDigestBytes`` bytes.
    ///   - expiresAt: When the session ends, after `now`.
    ///   - capacity: The most sessions kept, this one included: 1 to ``StoreLimits/maximumDashboardSessions``.
    ///   - now: The time of opening.
    /// - Throws: ``StoreError/Code/invalidInput`` for a digest, an expiry or a capacity outside the bounds.
    func openDashboardSession(_ digest: [UInt8], expiresAt: Date, capacity: Int, now: Date) async throws(StoreError)

    /// Whether `digest` names a session that has not expired at `now`.
    /// - Throws: ``StoreError/Code/invalidInput`` for a digest that is not
    ///   ``StoreLimits/dashboardSessionDigestBytes`` bytes.
    func isDashboardSessionLive(_ digest: [UInt8], now: Date) async throws(StoreError) -> Bool

    /// Deletes the session `digest` names (a logout), on every replica at once, and returns whether there was one.
    /// - Throws: ``StoreError/Code/invalidInput`` for a digest that is not
    ///   ``StoreLimits/dashboardSessionDigestBytes`` bytes.
    @discardableResult
    func closeDashboardSession(_ digest: [UInt8]) async throws(StoreError) -> Bool

    /// Deletes the sessions that expired at or before `now` and returns how many.
    func deleteExpiredDashboardSessions(now: Date) async throws(StoreError) -> Int
}
