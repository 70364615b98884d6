public import Foundation

/// An HTTP date (RFC 9110 §5.6.7) in its preferred form, IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), read
/// strictly: fixed width, English names, `GMT`, a real calendar date whose day name matches.
///
/// The service's answers carry one in their `Date` header, which the app-side client reads to count the service's
/// expiry times on the device's own clock; Apple's `Retry-After` may be one. The two obsolete forms (RFC 850 and
/// asctime), which RFC 9110 asks recipients to accept, are not read: no current server sends them.
public enum HTTPDate {
    /// The date `text` names, or `nil` for anything but an IMF-fixdate (blanks around it are allowed).
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8.drop(while: isBlank).reversed().drop(while: isBlank).reversed())
        return seconds(bytes).map { Date(timeIntervalSince1970: $0) }
    }

    private static func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Seconds since 1970 of exactly `Sun, 06 Nov 1994 08:49:37 GMT`, or `nil` for anything else.
    private static func seconds(_ bytes: [UInt8]) -> TimeInterval? {
        guard bytes.count == 29 else { return nil }
        func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }
        func number(_ range: Range<Int>) -> Int? {
            guard bytes[range].allSatisfy(isDigit) else { return nil }
            return Int(text(range))
        }
        let separators: [(Int, Character)] = [(3, ","), (4, " "), (7, " "), (11, " "), (16, " "), (19, ":"), (22, ":")]
        guard separators.allSatisfy({ Character(UnicodeScalar(bytes[$0.0])) == $0.1 }), text(25..<29) == " GMT",
            let weekday = days.firstIndex(of: text(0..<3)), let month = months.firstIndex(of: text(8..<11)),
            let day = number(5..<7), let year = number(12..<16), let hour = number(17..<19),
            let minute = number(20..<22), let second = number(23..<25),
            hour <= 23, minute <= 59, second <= 60,  // 60: a leap second
            (1...daysIn(month: month + 1, year: year)).contains(day)
        else { return nil }
        let epochDay = daysSince1970(year: year, month: month + 1, day: day)
        guard ((epochDay % 7 + 7) % 7 + 4) % 7 == weekday else { return nil }  // 1970-01-01 was a Thursday
        return TimeInterval(epochDay * 86_400 + hour * 3_600 + minute * 60 + second)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's `days_from_civil`).
    private static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
