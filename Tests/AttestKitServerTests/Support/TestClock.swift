import Foundation
import Synchronization

/// A settable clock shared by the server under test, its Apple mock and the simulated devices: it stands still
/// unless a test moves it, so challenge lifetimes, rate-limit buckets, timestamp windows and receipt times are
/// exact.
final class TestClock: Sendable {
    private let value: Mutex<Date>

    /// Starts at `start`, by default the current time rounded down to a whole second (stores keep milliseconds,
    /// so times read back compare equal).
    init(_ start: Date = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))) {
        value = Mutex(start)
    }

    /// The clock's time.
    func now() -> Date { value.withLock { $0 } }

    /// The clock's time in Unix milliseconds, as `timestamp:` freshness carries it.
    var milliseconds: Int64 { Int64((now().timeIntervalSince1970 * 1_000).rounded(.down)) }

    /// Moves the clock by `seconds` (negative moves it back).
    func advance(by seconds: TimeInterval) { value.withLock { $0 = $0.addingTimeInterval(seconds) } }

    /// The clock as the closure servers and mocks take.
    var closure: @Sendable () -> Date { { self.now() } }

    /// `date` as the API writes times: RFC 3339 UTC with milliseconds.
    static func apiText(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }
}
