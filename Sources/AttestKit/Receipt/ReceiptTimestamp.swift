import Foundation

/// A strict parser for the ISO-8601 UTC timestamps in receipt fields 12, 19 and 21.
///
/// Apple writes `YYYY-MM-DDTHH:MM:SS` followed by a variable number of fractional digits, or none, and `Z`:
/// `2021-01-23T12:13:35.801Z`, `2020-11-27T22:41:40.46Z`. This accepts exactly that shape (one to nine
/// fractional digits) with range-checked fields, and nothing else: no offsets, no lower-case separators, no
/// leap seconds. It does no allocation, unlike `DateFormatter`, which is slow on the verification path.
enum ReceiptTimestamp {
    /// The longest accepted timestamp: 19 characters, a dot, nine digits and `Z`.
    static let maximumLength = 30

    /// The instant `text` names, or `nil` when it is not a timestamp of the accepted shape.
    static func parse(_ text: ArraySlice<UInt8>) -> Date? {
        guard text.count >= 20, text.count <= maximumLength else { return nil }
        var cursor = text.startIndex

        func number(_ width: Int) -> Int? {
            var value = 0
            for _ in 0..<width {
                guard cursor < text.endIndex, let digit = digitValue(text[cursor]) else { return nil }
                value = value * 10 + digit
                cursor += 1
            }
            return value
        }
        func separator(_ ascii: Unicode.Scalar) -> Bool {
            guard cursor < text.endIndex, text[cursor] == UInt8(ascii: ascii) else { return false }
            cursor += 1
            return true
        }

        guard let year = number(4), separator("-"), let month = number(2), separator("-"), let day = number(2),
            separator("T"), let hour = number(2), separator(":"), let minute = number(2), separator(":"),
            let second = number(2)
        else { return nil }
        guard (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }

        var nanoseconds = 0
        if separator(".") {
            var digits = 0
            while cursor < text.endIndex, let digit = digitValue(text[cursor]) {
                digits += 1
                guard digits <= 9 else { return nil }
                nanoseconds = nanoseconds * 10 + digit
                cursor += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<9 { nanoseconds *= 10 }
        }
        guard separator("Z"), cursor == text.endIndex else { return nil }

        let seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + second
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanoseconds) / 1_000_000_000)
    }

    private static func digitValue(_ byte: UInt8) -> Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int(byte - UInt8(ascii: "0")) : nil
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * ((month + 9) % 12) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
