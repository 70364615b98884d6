package import Foundation

/// The API's times: RFC 3339 in UTC with milliseconds (`2026-11-21T10:00:00.000Z`).
package enum APITime {
    package static func format(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt))
    }
}
