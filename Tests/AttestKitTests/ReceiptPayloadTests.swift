import Foundation
import Testing

@testable import AttestKit

/// The receipt payload (`SET OF` attribute sequences) and its timestamps, parsed directly.
@Suite struct ReceiptPayloadTests {
    static let fields = SyntheticReceipts.shared.fields()

    static func parse(_ fields: [(Int, [UInt8])]) throws -> Receipt {
        try Receipt(payload: SyntheticReceipts.payload(fields)[...], bytes: [1, 2, 3])
    }

    static func replacing(_ number: Int, with value: String) -> [(Int, [UInt8])] {
        fields.map { $0.0 == number ? (number, Array(value.utf8)) : $0 }
    }

    @Test func aCompletePayloadParses() throws {
        let receipt = try Self.parse(Self.fields)
        #expect(receipt.type == .receipt)
        #expect(receipt.token == "dG9rZW4=")
        #expect(receipt.clientHash == [UInt8](repeating: 0xAB, count: 32))
        #expect(receipt.bytes == [1, 2, 3])
        #expect(receipt.description.contains("riskMetric: 7"))
        #expect(!receipt.description.contains("dG9rZW4="))
    }

    @Test func unknownFieldsAreIgnoredAndOrderDoesNotMatter() throws {
        let receipt = try Self.parse(Self.fields.reversed() + [(1, [0]), (99, Array("future".utf8))])
        #expect(receipt == (try Self.parse(Self.fields)))
    }

    @Test(arguments: [2, 3, 4, 5, 6, 12, 17, 19])
    func aMissingRequiredFieldIsRejected(_ number: Int) throws {
        let incomplete = Self.fields.filter { $0.0 != number }
        #expect(throws: AttestKitError.code(.receiptMalformed)) { try Self.parse(incomplete) }
    }

    @Test func attestReceiptsNeedNoRiskMetricOrNotBefore() throws {
        let attest = Self.replacing(6, with: "ATTEST").filter { $0.0 != 17 && $0.0 != 19 && $0.0 != 7 }
        let receipt = try Self.parse(attest)
        #expect(receipt.type == .attest)
        #expect(receipt.riskMetric == nil && receipt.notBefore == nil && receipt.environment == nil)
    }

    @Test(arguments: [2, 6, 12, 99])
    func aRepeatedFieldIsRejected(_ number: Int) throws {
        let repeated = Self.fields.filter { $0.0 != number } + [(number, [0x31]), (number, [0x31])]
        #expect(throws: AttestKitError.code(.receiptMalformed)) { try Self.parse(repeated) }
    }

    @Test(arguments: [
        (6, "attest"), (6, "RECEIPTS"), (17, ""), (17, "-1"), (17, "1e3"), (17, "1234567890"),
        (12, "2025-06-15 10:00:00Z"), (19, "yesterday"), (21, "2025-06-15T10:00:00+00:00"),
        (2, String(repeating: "A", count: 256)),
    ])
    func anInvalidValueIsRejected(_ number: Int, _ value: String) throws {
        #expect(throws: AttestKitError.code(.receiptMalformed)) { try Self.parse(Self.replacing(number, with: value)) }
    }

    @Test func invalidUTF8IsRejected() throws {
        let fields = Self.fields.map { $0.0 == 5 ? (5, [0x41, 0xC3, 0x28]) : $0 }
        #expect(throws: AttestKitError.code(.receiptMalformed)) { try Self.parse(fields) }
    }

    @Test func tooManyFieldsAreRejected() throws {
        let padding = (100..<(100 + Receipt.maximumAttributes)).map { ($0, [UInt8]()) }
        #expect(throws: AttestKitError.code(.receiptMalformed)) { try Self.parse(Self.fields + padding) }
    }

    @Test(arguments: [
        [], [0x31, 0x00], [0x30, 0x00], [0x31, 0x03, 0x30, 0x01, 0x02], [0x31, 0x80, 0x00, 0x00, 0x00],
    ])
    func aPayloadThatIsNotAnAttributeSetIsRejected(_ payload: [UInt8]) throws {
        #expect(throws: AttestKitError.code(.receiptMalformed)) { try Receipt(payload: payload[...], bytes: payload) }
    }

    // MARK: - Timestamps

    @Test(
        arguments: [
            ("2021-01-23T12:13:35.801Z", 1_611_404_015_801), ("2020-11-27T22:41:40.46Z", 1_606_516_900_460),
            ("2020-10-03T09:13:53.5Z", 1_601_716_433_500), ("2024-02-29T00:00:00Z", 1_709_164_800_000),
            ("1970-01-01T00:00:00.000000001Z", 0), ("2000-12-31T23:59:59.999Z", 978_307_199_999),
        ] as [(String, Int64)])
    func timestampsParseToTheMillisecond(_ text: String, _ milliseconds: Int64) throws {
        let date = try #require(ReceiptTimestamp.parse(Array(text.utf8)[...]))
        #expect(ReceiptTests.milliseconds(date) == milliseconds)
        #expect(ReceiptTests.milliseconds(text) == milliseconds)
    }

    @Test(arguments: [
        "", "2021-01-23T12:13:35", "2021-01-23T12:13:35.Z", "2021-01-23T12:13:35.1234567890Z",
        "2021-01-23t12:13:35Z", "2021-01-23T12:13:35z", "2021-01-23T12:13:35+01:00", "2021-13-01T00:00:00Z",
        "2021-02-29T00:00:00Z", "1900-02-29T00:00:00Z", "2021-04-31T00:00:00Z", "2021-01-00T00:00:00Z",
        "2021-01-01T24:00:00Z", "2021-01-01T00:60:00Z", "2021-01-01T00:00:60Z", "2021-1-01T00:00:00Z",
        "+021-01-01T00:00:00Z", "2021-01-01T00:00:00ZZ", "2021-01-01T00:00:00.5Z ", "２021-01-01T00:00:00Z",
    ])
    func malformedTimestampsAreRejected(_ text: String) {
        #expect(ReceiptTimestamp.parse(Array(text.utf8)[...]) == nil)
    }
}
