import Foundation

/// The wait before the next attempt after `failures` failures in a row: `initial` doubled per earlier failure, at
/// most `maximum`, jittered down by up to half (so that many devices that failed together do not come back
/// together).
struct Backoff: Sendable {
    /// The first wait, in seconds.
    let initial: TimeInterval
    /// The longest wait, in seconds.
    let maximum: TimeInterval

    /// The wait after `failures` (at least 1) failures, with `random` in `0..<1`.
    func delay(failures: Int, random: Double) -> TimeInterval {
        let exponent = Double(min(max(failures, 1) - 1, 30))
        let full = min(maximum, initial * pow(2, exponent))
        return full * (0.5 + 0.5 * min(max(random, 0), 1))
    }
}
