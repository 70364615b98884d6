import Foundation

/// The payload of a simulated receipt: `SET OF SEQUENCE { type INTEGER, version INTEGER (1), value OCTET STRING }`
/// in the order Apple writes the fields, which is not DER's sorted order (docs/apple-formats.md §4).
struct ReceiptPayload: Sendable {
    /// The attributes, in output order.
    var fields: [(type: Int, value: [UInt8])]

    /// The field numbers this module writes.
    enum Field {
        static let appID = 2
        static let attestedCertificate = 3
        static let clientHash = 4
        static let token = 5
        static let type = 6
        static let environment = 7
        static let creationTime = 12
        static let riskMetric = 17
        static let notBefore = 19
        static let expirationTime = 21
    }

    /// Field 21: Apple stops honouring a receipt 90 days after its creation.
    static let lifetime: TimeInterval = 90 * 86_400
    /// Field 19 of a refreshed receipt: one day after its creation.
    static let refreshDelay: TimeInterval = 86_400

    /// The value of field `type`, if present.
    subscript(type: Int) -> [UInt8]? { fields.first { $0.type == type }?.value }

    /// The DER-style encoding (definite lengths), fields in their given order.
    func encoded() -> [UInt8] {
        typealias Tag = BERWriter.Tag
        let attributes = fields.map { field in
            BERWriter.definite(
                Tag.sequence,
                BERWriter.definite(Tag.integer, Self.integer(field.type)) + BERWriter.definite(Tag.integer, [1])
                    + BERWriter.definite(Tag.octetString, field.value))
        }
        return BERWriter.definite(Tag.set, Array(attributes.joined()))
    }

    /// The content octets of a non-negative INTEGER, minimal.
    private static func integer(_ value: Int) -> [UInt8] {
        var octets = [UInt8(truncatingIfNeeded: value)]
        var remaining = value >> 8
        while remaining > 0 {
            octets.insert(UInt8(truncatingIfNeeded: remaining), at: 0)
            remaining >>= 8
        }
        if let first = octets.first, first & 0x80 != 0 { octets.insert(0, at: 0) }
        return octets
    }

    /// `date` truncated to whole milliseconds, the precision receipts carry.
    static func milliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded(.down) / 1000)
    }

    /// A receipt time as Apple writes it: ISO-8601 UTC to the millisecond, with the fraction's trailing zeros
    /// dropped, and no fraction on a whole second: `2021-01-23T12:13:35.801Z`, `2020-11-27T22:41:40.46Z`,
    /// `2026-10-01T12:00:00Z`. Apple's real receipts write 3 digits, or 2 where the third is 0 (19 of the 178
    /// times in the 78 receipts of `Tests/AttestKitTests/Vectors`); none falls on a multiple of 100 ms or on a whole
    /// second, where this follows the same rule (AttestKit reads a fraction of any length, or none).
    static func timestamp(_ date: Date) -> [UInt8] {
        var milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var fraction = milliseconds % 1000
        if fraction < 0 { fraction += 1000 }
        milliseconds -= fraction
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        // `…SSZ`, then `.` and the fraction's digits without trailing zeros before the `Z`.
        var text = Array(formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000)).utf8)
        guard fraction != 0, text.last == UInt8(ascii: "Z") else { return text }
        var digits = [fraction / 100, fraction / 10 % 10, fraction % 10].map { UInt8(ascii: "0") + UInt8($0) }
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        text.insert(contentsOf: [UInt8(ascii: ".")] + digits, at: text.count - 1)
        return text
    }

    /// `2026-04-21T18:13:12.150Z`: ISO-8601 UTC with three fractional digits always (a vector's `verifyAt`, not a
    /// receipt's time).
    static func iso8601Milliseconds(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        return formatter.string(from: milliseconds(date))
    }
}
