import AttestKitWire
import Foundation

/// Reads Apple's `Retry-After` header (RFC 9110 §10.2.3) as the wait it asks for, strictly: anything else is
/// ignored, and the retry policy's own backoff applies.
///
/// Two forms are read:
/// - `delay-seconds`: ASCII digits only (`2`, `120`, `0002`); a sign, a fraction or a unit is malformed. Absurdly
///   large values saturate (999,999,999 s; callers bound what they keep of it).
/// - `HTTP-date` in its preferred form, IMF-fixdate (`Sun, 12 Apr 2026 13:20:03 GMT`), read by `HTTPDate`. A date
///   in the past asks for no wait. The obsolete forms are not read: ignoring one only means the policy's backoff.
enum RetryAfter {
    /// The wait `value` asks for, measured from `now` when it is a date, or `nil` when it is malformed.
    static func wait(_ value: String, now: Date) -> Duration? {
        let bytes = Array(value.utf8.drop(while: isBlank).reversed().drop(while: isBlank).reversed())
        guard !bytes.isEmpty else { return nil }
        if bytes.allSatisfy(isDigit) {
            // Leading zeros are part of the grammar (`1*DIGIT`): `0000000002` is 2 s, not a saturated wait.
            let significant = bytes.drop { $0 == UInt8(ascii: "0") }
            guard significant.count <= 9, let seconds = Int64(String(decoding: significant, as: UTF8.self)) else {
                return significant.isEmpty ? .zero : .seconds(999_999_999)
            }
            return .seconds(seconds)
        }
        guard let date = HTTPDate.parse(String(decoding: bytes, as: UTF8.self)) else { return nil }
        let milliseconds = date.timeIntervalSince(now) * 1_000
        return milliseconds > 0 ? .milliseconds(Int64(milliseconds.rounded(.up))) : .zero
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
}
