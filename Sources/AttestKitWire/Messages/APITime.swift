public import Foundation

/// The API's times: RFC 3339 in UTC with milliseconds (`2026-11-21T10:00:00.000Z`).
///
/// `Date.ISO8601FormatStyle` where the OS has it (iOS 15, macOS 12, tvOS 15, watchOS 8, and Linux); on the
/// client's older floor (iOS 14, macOS 11) an `ISO8601DateFormatter` with the same options, made per call.
public enum APITime {
    /// `date` in the API's format.
    public static func format(_ date: Date) -> String {
        if #available(iOS 15, macOS 12, tvOS 15, watchOS 8, *) {
            // apple-api-check: guarded
            return date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
        }
        return formatter().string(from: date)
    }

    /// The date of a time in the API's format, `nil` for anything else.
    public static func parse(_ text: String) -> Date? {
        if #available(iOS 15, macOS 12, tvOS 15, watchOS 8, *) {
            // apple-api-check: guarded
            return try? Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt).parse(text)
        }
        return formatter().date(from: text)
    }

    private static func formatter() -> ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter
    }
}
