import AttestKit
import Crypto
import Foundation
import Synchronization

/// The operator dashboard's browser sessions: a login with the admin token opens one, named by an unguessable
/// cookie value (32 random bytes, Base64url), that expires after ``lifetime``.
///
/// Only the SHA-256 of each value is kept, and a presented value is compared in constant time with every live
/// session's. At most ``capacity`` sessions live at once; a new login drops the oldest.
final class DashboardSessions: Sendable {
    /// The cookie's name.
    static let cookieName = "attestkit_session"

    /// How long a session lives.
    let lifetime: TimeInterval
    /// The most sessions alive at once.
    let capacity: Int
    private let sessions = Mutex<[(digest: [UInt8], expires: Date)]>([])

    init(lifetime: TimeInterval, capacity: Int = 32) {
        self.lifetime = lifetime
        self.capacity = max(1, capacity)
    }

    /// Opens a session at `now`; returns the cookie value.
    func open(now: Date) -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        let value = Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let digest = Array(SHA256.hash(data: Array(value.utf8)))
        sessions.withLock { sessions in
            sessions.removeAll { $0.expires <= now }
            sessions.append((digest, now.addingTimeInterval(lifetime)))
            if sessions.count > capacity { sessions.removeFirst(sessions.count - capacity) }
        }
        return value
    }

    /// Whether `value` names a live session at `now`. Every live session is compared, whatever matched.
    func isValid(_ value: String, now: Date) -> Bool {
        guard (1...128).contains(value.utf8.count) else { return false }
        let digest = Array(SHA256.hash(data: Array(value.utf8)))
        return sessions.withLock { sessions in
            var matched = false
            for session in sessions where ConstantTime.equal(session.digest, digest) && session.expires > now {
                matched = true
            }
            return matched
        }
    }

    /// Closes the session `value` names, if any.
    func close(_ value: String) {
        let digest = Array(SHA256.hash(data: Array(value.utf8)))
        sessions.withLock { sessions in sessions.removeAll { ConstantTime.equal($0.digest, digest) } }
    }

    /// The session cookie's value in a `Cookie` header (`name=value; other=...`), or `nil`. A cookie sent twice
    /// presents nothing.
    static func cookie(in headers: [String]) -> String? {
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
