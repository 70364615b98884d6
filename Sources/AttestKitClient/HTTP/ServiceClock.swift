import AttestKitWire
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The service's expiry times counted on the device's clock.
///
/// The service says when a challenge or a session token expires by its own clock, and a device's clock may be
/// minutes or days off (set by hand, no network time). Compared with the device's clock as it is, a challenge
/// could look expired the moment it arrives (a clock ahead: the client would fetch challenge after challenge) or
/// valid long after the service stopped taking it (a clock behind). The answer's `Date` header gives the service's
/// time of the answer, so the lifetime left can be counted from the answer's arrival on the device's own clock.
enum ServiceClock {
    /// How long after `response` arrived `expiresAt` falls, by the service's clock of the answer's `Date` header,
    /// or `nil` when the answer has none that reads as an HTTP date. The header counts whole seconds, so the
    /// lifetime is counted from the end of its second: never longer than the service's, at most a second shorter.
    static func lifetime(until expiresAt: Date, answeredBy response: HTTPURLResponse) -> TimeInterval? {
        let field = response.allHeaderFields.first { name, _ in
            (name as? String)?.caseInsensitiveCompare("Date") == .orderedSame
        }
        guard let text = field?.value as? String, text.utf8.count <= 64, let date = HTTPDate.parse(text) else {
            return nil
        }
        return max(0, expiresAt.timeIntervalSince(date) - 1)
    }

    /// When `expiresAt` of the service falls by the device's clock: `arrival` (the device's time the answer
    /// arrived) plus the ``lifetime(until:answeredBy:)`` left, or `expiresAt` as it is when the answer has no
    /// `Date` header.
    static func deviceTime(of expiresAt: Date, answeredBy response: HTTPURLResponse, arrival: Date) -> Date {
        guard let lifetime = lifetime(until: expiresAt, answeredBy: response) else { return expiresAt }
        return arrival.addingTimeInterval(lifetime)
    }
}
