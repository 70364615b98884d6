package import AttestKitStore
import Crypto
package import Foundation

/// The operator dashboard's browser sessions: a login with the admin token opens one, named by an unguessable
/// cookie value (32 random bytes, Base64url), that expires after ``lifetime`` or when it is closed (logout).
///
/// Sessions live in the store (`DashboardSessionStore`), so every replica on one database honours a session another
/// opened, and a logout on any replica deletes it for all. Only an HMAC-SHA256 of each value, keyed by the admin
/// token, is stored, never the value. A session is thereby bound to the admin token it was opened under: a server
/// with another admin token (the token rotated) computes other digests and honours none of the old cookies, on every
/// replica at once. The store finds a presented value's digest by equality, as its primary key, not in constant
/// time: the digest is a keyed hash of a 256-bit random value, so neither the timing of a lookup nor anything an
/// attacker can choose brings a guess closer. At most ``capacity`` sessions live at once; a new login drops the
/// oldest.
package struct DashboardSessions: Sendable {
    /// The cookie's name.
    package static let cookieName = "attestkit_session"

    /// How long a session lives.
    package let lifetime: TimeInterval
    /// The most sessions alive at once.
    package let capacity: Int
    private let key: SymmetricKey
    private let store: any DashboardSessionStore

    /// Sessions bound to `adminToken`, kept in `store`.
    package init(
        lifetime: TimeInterval, adminToken: [UInt8], store: any DashboardSessionStore, capacity: Int = 32
    ) {
        self.lifetime = lifetime
        self.capacity = min(max(1, capacity), StoreLimits.maximumDashboardSessions)
        self.key = SymmetricKey(data: adminToken)
        self.store = store
    }

    /// The digest kept for a cookie value: HMAC-SHA256 keyed by the admin token.
    package func digest(_ value: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(value.utf8), using: key))
    }

    /// Opens a session at `now`; returns the cookie value.
    /// - Throws: The store's error (the session is not opened).
    package func open(now: Date) async throws(StoreError) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let value = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try await store.openDashboardSession(
            digest(value), expiresAt: now.addingTimeInterval(lifetime), capacity: capacity, now: now)
        return value
    }

    /// Whether `value` names a live session at `now`.
    /// - Throws: The store's error: the caller must then refuse the request (fail closed).
    package func isValid(_ value: String, now: Date) async throws(StoreError) -> Bool {
        guard (1...128).contains(value.utf8.count) else { return false }
        return try await store.isDashboardSessionLive(digest(value), now: now)
    }

    /// Closes the session `value` names, if any, on every replica: the cookie opens nothing afterwards.
    /// - Throws: The store's error (the session may still be open).
    package func close(_ value: String) async throws(StoreError) {
        guard (1...128).contains(value.utf8.count) else { return }
        try await store.closeDashboardSession(digest(value))
    }

    /// The session cookie's value in a `Cookie` header (`name=value; other=...`), or `nil`. A cookie sent twice
    /// presents nothing.
    package static func cookie(in headers: [String]) -> String? {
        var found: [String] = []
        for header in headers {
            for part in header.split(separator: ";") {
                let pair = part.trimmingCharacters(in: .whitespaces)
                guard let equals = pair.firstIndex(of: "=") else { continue }
                if pair[..<equals] == cookieName { found.append(String(pair[pair.index(after: equals)...])) }
            }
        }
        return found.count == 1 ? found[0] : nil
    }
}
