public import Foundation

/// The month of a device's last bit update, as DeviceCheck reports it: `last_update_time` is `"YYYY-MM"`
/// (month granularity, UTC).
public struct DeviceCheckMonth: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The year, 1970 to 9999.
    public let year: Int
    /// The month, 1 to 12.
    public let month: Int

    /// Creates a month; `nil` unless the year is 1970...9999 and the month 1...12.
    public init?(year: Int, month: Int) {
        guard (1970...9999).contains(year), (1...12).contains(month) else { return nil }
        self.year = year
        self.month = month
    }

    /// The UTC month of `date`, clamped to 1970-01...9999-12.
    public init(date: Date) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month], from: date)
        let year = parts.year ?? 1970
        if year < 1970 {
            (self.year, self.month) = (1970, 1)
        } else if year > 9999 {
            (self.year, self.month) = (9999, 12)
        } else {
            (self.year, self.month) = (year, min(12, max(1, parts.month ?? 1)))
        }
    }

    /// Parses exactly `YYYY-MM`; `nil` for anything else.
    public init?(_ text: some StringProtocol) {
        let bytes = Array(text.utf8)
        guard bytes.count == 7, bytes[4] == UInt8(ascii: "-"),
            let year = Self.number(bytes[0..<4]), let month = Self.number(bytes[5..<7])
        else { return nil }
        self.init(year: year, month: month)
    }

    /// `YYYY-MM`.
    public var description: String {
        let yearText = String(year)
        let monthText = month < 10 ? "0\(month)" : String(month)
        return String(repeating: "0", count: max(0, 4 - yearText.count)) + yearText + "-" + monthText
    }

    /// Earlier months first.
    public static func < (lhs: DeviceCheckMonth, rhs: DeviceCheckMonth) -> Bool {
        (lhs.year, lhs.month) < (rhs.year, rhs.month)
    }

    private static func number(_ digits: ArraySlice<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = value * 10 + Int(digit - UInt8(ascii: "0"))
        }
        return value
    }
}
