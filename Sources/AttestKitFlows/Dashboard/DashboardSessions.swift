package import AttestKitStore
import Crypto
package import Foundation

/// The operator dashboard's browser sessions: a login with an admin token opens one, named by an unguessable
/// cookie value (32 random bytes, Base64url), that expires after ``lifetime`` or when it is closed (logout).
///
/// Sessions live in the store (`DashboardSessionStore`), so every replica on one database honours a session another
/// opened, and a logout on any replica deletes it for all. Only an HMAC-SHA256 of each value, keyed by the admin
/// token the login presented, is stored, never the value. A session is thereby bound to the token that opened it: it
/// is honoured wherever that token is accepted (`admin.token` or one of `admin.previous-tokens`) and nowhere else, so
/// removing a token from the configuration ends every session opened with it, on every replica at once, while the
/// sessions of the tokens still accepted go on. The store finds a presented value's digest by equality, as its
/// primary key, not in constant time: the digest is a keyed hash of a 256-bit random value, so neither the timing of
/// a lookup nor anything an attacker can choose brings a guess closer. At most ``capacity`` sessions live at once; a
/// new login drops the oldest.
package struct DashboardSessions: Sendable {
    /// The cookie's name.
    package static let cookieName = "attestkit_session"

    /// How long a session lives.
    package let lifetime: TimeInterval
    /// The most sessions alive at once.
    package let capacity: Int
    /// A key per accepted admin token, the current one first.
    private let keys: [SymmetricKey]
    private let store: any DashboardSessionStore

    /// Sessions opened with `adminToken` or one of `previousAdminTokens` (the tokens a login accepts), kept in
    /// `store`.
    package init(
        lifetime: TimeInterval, adminToken: [UInt8], previousAdminTokens: [[UInt8]] = [],
        store: any DashboardSessionStore, capacity: Int = 32
    ) {
        self.lifetime = lifetime
        self.capacity = min(max(1, capacity), StoreLimits.maximumDashboardSessions)
        self.keys = ([adminToken] + previousAdminTokens).map { SymmetricKey(data: $0) }
        self.store = store
    }

    /// The digest kept for a cookie value of a session opened with `token` (the current admin token when `nil`):
    /// HMAC-SHA256 keyed by that token.
    package func digest(_ value: String, token: [UInt8]? = nil) -> [UInt8] {
        digest(value, key: token.map { SymmetricKey(data: $0) } ?? keys[0])
    }

    private func digest(_ value: String, key: SymmetricKey) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(value.utf8), using: key))
    }

    /// Opens a session at `now`, bound to `token` (the admin token the login presented, already checked; the current
    /// admin token when `nil`); returns the cookie value.
    /// - Throws: The store's error (the session is not opened).
    package func open(now: Date, token: [UInt8]? = nil) async throws(StoreError) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let value = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        try await store.openDashboardSession(
            digest(value, token: token), expiresAt: now.addingTimeInterval(lifetime), capacity: capacity, now: now)
        return value
    }

    /// Whether `value` names a live session at `now`, opened with one of the admin tokens accepted (one store read
    /// per accepted token, until one answers yes).
    /// - Throws: The store's error: the caller must then refuse the request (fail closed).
    package func isValid(_ value: String, now: Date) async throws(StoreError) -> Bool {
        guard (1...128).contains(value.utf8.count) else { return false }
        for key in keys {
            if try await store.isDashboardSessionLive(digest(value, key: key), now: now) { return true }
        }
        return false
    }

    /// Closes the session `value` names, if any, on every replica: the cookie opens nothing afterwards (whichever
    /// accepted admin token opened it).
    /// - Throws: The store's error (the session may still be open).
    package func close(_ value: String) async throws(StoreError) {
        guard (1...128).contains(value.utf8.count) else { return }
        for key in keys { try await store.closeDashboardSession(digest(value, key: key)) }
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
