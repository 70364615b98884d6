import AttestKit
import Crypto
package import Foundation
import Synchronization

/// The operator dashboard's browser sessions: a login with the admin token opens one, named by an unguessable
/// cookie value (32 random bytes, Base64url), that expires after ``lifetime`` or when it is closed (logout).
///
/// Only an HMAC-SHA256 of each value, keyed by the admin token, is kept, and a presented value's is compared in
/// constant time with every live session's. A session is thereby bound to the admin token it was opened under: a
/// server with another admin token (the token rotated) computes other digests and honours none of the old
/// cookies, even from a table it shares with the old server (``Table``). At most ``capacity`` sessions live at
/// once; a new login drops the oldest.
package final class DashboardSessions: Sendable {
    /// The cookie's name.
    package static let cookieName = "attestkit_session"

    /// Where sessions are kept: their digests and expiry times. In memory, per process; one table could be shared
    /// by servers, since a digest means nothing under another admin token.
    package final class Table: Sendable {
        fileprivate let sessions = Mutex<[(digest: [UInt8], expires: Date)]>([])

        /// An empty table.
        package init() {}
    }

    /// How long a session lives.
    package let lifetime: TimeInterval
    /// The most sessions alive at once.
    package let capacity: Int
    private let key: SymmetricKey
    private let table: Table

    /// Sessions bound to `adminToken`, kept in `table`.
    package init(lifetime: TimeInterval, adminToken: [UInt8], capacity: Int = 32, table: Table = Table()) {
        self.lifetime = lifetime
        self.capacity = max(1, capacity)
        self.key = SymmetricKey(data: adminToken)
        self.table = table
    }

    /// The digest kept for a cookie value: HMAC-SHA256 keyed by the admin token.
    package func digest(_ value: String) -> [UInt8] {
        Array(HMAC<SHA256>.authenticationCode(for: Array(value.utf8), using: key))
    }

    /// Opens a session at `now`; returns the cookie value.
    package func open(now: Date) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let value = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let digest = digest(value)
        table.sessions.withLock { sessions in
            sessions.removeAll { $0.expires <= now }
            sessions.append((digest, now.addingTimeInterval(lifetime)))
            if sessions.count > capacity { sessions.removeFirst(sessions.count - capacity) }
        }
        return value
    }

    /// Whether `value` names a live session at `now`. Every live session is compared, whatever matched.
    package func isValid(_ value: String, now: Date) -> Bool {
        guard (1...128).contains(value.utf8.count) else { return false }
        let digest = digest(value)
        return table.sessions.withLock { sessions in
            var matched = false
            for session in sessions where ConstantTime.equal(session.digest, digest) && session.expires > now {
                matched = true
            }
            return matched
        }
    }

    /// Closes the session `value` names, if any: the cookie opens nothing afterwards.
    package func close(_ value: String) {
        guard (1...128).contains(value.utf8.count) else { return }
        let digest = digest(value)
        table.sessions.withLock { sessions in sessions.removeAll { ConstantTime.equal($0.digest, digest) } }
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
