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

    /// `2026-04-21T18:13:12.153Z`: ISO-8601 UTC with milliseconds, as Apple writes receipt times.
    static func timestamp(_ date: Date) -> [UInt8] {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        return Array(formatter.string(from: milliseconds(date)).utf8)
    }
}
