public import Foundation

/// The API's times: RFC 3339 in UTC with milliseconds (`2026-11-21T10:00:00.000Z`).
public enum APITime {
    /// `date` in the API's format.
    public static func format(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }

    /// The date of a time in the API's format, `nil` for anything else.
    public static func parse(_ text: String) -> Date? {
        try? Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt).parse(text)
    }
}
