import AttestKit
import AttestKitTesting
import Foundation
import SwiftASN1
import Testing

/// Receipts: Apple's BER layout (docs/apple-formats.md §4), accepted with the software Apple's receipt root only, and
/// refreshed into `RECEIPT`s as Apple's exchange does.
@Suite struct SimulatedReceiptTests {
    /// The field numbers of a receipt payload, in their order.
    static func fieldOrder(_ receipt: [UInt8]) throws -> [Int] {
        let content = try ReceiptContainer(berEncoded: receipt).content
        var order = [Int]()
        try BER.set(BER.parse(content), identifier: .set) { attributes in
            while let attribute = attributes.next() {
                try BER.sequence(attribute, identifier: .sequence) { parts in
                    order.append(try Int(berEncoded: &parts))
                    while parts.next() != nil {}
                }
            }
        }
        return order
    }

    /// The value of each field of a receipt payload, by field number.
    static func fieldValues(_ receipt: [UInt8]) throws -> [Int: [UInt8]] {
        let content = try ReceiptContainer(berEncoded: receipt).content
        var values: [Int: [UInt8]] = [:]
        try BER.set(BER.parse(content), identifier: .set) { attributes in
            while let attribute = attributes.next() {
                try BER.sequence(attribute, identifier: .sequence) { parts in
                    let type = try Int(berEncoded: &parts)
                    _ = try Int(berEncoded: &parts)
                    values[type] = Array(try ASN1OctetString(berEncoded: &parts).bytes)
                }
            }
        }
        return values
    }

    /// The times of a receipt (fields 12, 19 and 21) as written.
    static func times(_ receipt: [UInt8]) throws -> [String?] {
        let values = try fieldValues(receipt)
        return [12, 19, 21].map { field in values[field].map { String(decoding: $0, as: UTF8.self) } }
    }

    static func attestReceipt() throws -> (SimulatedDevice, KeyID, [UInt8]) {
        let (device, keyID, object) = try Fixture.attested(.development)
        return (device, keyID, try #require(try AttestationObject(bytes: object).receipt))
    }

    @Test func attestReceiptHasApplesBERLayout() throws {
        let (_, _, receipt) = try Self.attestReceipt()
        #expect(Array(receipt.prefix(2)) == [0x30, 0x80])
        #expect(Array(receipt.suffix(6)) == [0, 0, 0, 0, 0, 0])
        // eContent: a constructed OCTET STRING of 1000-byte chunks; the payload straddles them.
        let chunked = try #require(receipt.offsets(of: [0x24, 0x80, 0x04, 0x82, 0x03, 0xE8]))
        let container = try ReceiptContainer(berEncoded: receipt)
        #expect(container.encoding == .indefiniteLength)
        #expect(container.content.count > 1000)
        #expect(Array(receipt[(chunked.upperBound)..<(chunked.upperBound + 1000)]) == Array(container.content.prefix(1000)))
        #expect(container.signedAttributes == nil)
        #expect(container.certificates.count == 3)
        #expect(try container.verifySignature() == .content)
        // Apple's order, which DER would have sorted otherwise.
        #expect(try Self.fieldOrder(receipt) == [2, 3, 4, 5, 6, 7, 12, 21])
    }

    @Test func attestReceiptVerifiesWithTheSimulatorsRootOnly() async throws {
        let (device, keyID, receipt) = try Self.attestReceipt()
        let verified = try await ReceiptVerifier(anchor: Fixture.apple.trustAnchors.receipt).verify(
            receipt, appID: Fixture.appID, keyID: keyID, expectedType: .attest, environment: .development,
            maximumAge: 300, at: Fixture.time)
        #expect(verified.appID == Fixture.appID.description)
        #expect(verified.clientHash == Fixture.clientDataHash)
        #expect(verified.environment == "sandbox")
        #expect(verified.creationTime == Fixture.time)
        #expect(verified.expirationTime == Fixture.time.addingTimeInterval(90 * 86_400))
        #expect(verified.token.utf8.count == 88)
        #expect(verified.riskMetric == nil)
        #expect(device.receipt(for: keyID) == receipt)

        await Fixture.expect(.receiptCertificateUntrusted) {
            _ = try await ReceiptVerifier().verify(
                receipt, appID: Fixture.appID, keyID: keyID, maximumAge: nil, at: Fixture.time)
        }
    }

    @Test func refreshReturnsAReceiptWithARiskMetric() async throws {
        let (device, keyID, attestReceipt) = try Self.attestReceipt()
        let later = Fixture.time.addingTimeInterval(3_600)
        let refreshed = try device.refreshReceipt(for: keyID, riskMetric: 7, at: later)
        #expect(try Self.fieldOrder(refreshed) == [17, 6, 2, 3, 4, 5, 7, 12, 19, 21])
        let verified = try await ReceiptVerifier(anchor: Fixture.apple.trustAnchors.receipt).verify(
            refreshed, appID: Fixture.appID, keyID: keyID, expectedType: .receipt, environment: .development,
            maximumAge: 300, at: later)
        #expect(verified.riskMetric == 7)
        // The token (field 5) stays the attestation receipt's, as in every real chain of refreshes.
        let first = try await ReceiptVerifier(anchor: Fixture.apple.trustAnchors.receipt).verify(
            attestReceipt, appID: Fixture.appID, keyID: keyID, expectedType: .attest, environment: .development,
            maximumAge: nil, at: Fixture.time)
        #expect(verified.token == first.token)
        #expect(verified.creationTime == later)
        #expect(verified.notBefore == later.addingTimeInterval(86_400))
        #expect(verified.expirationTime == later.addingTimeInterval(90 * 86_400))
        // Field 4 comes back mangled, as Apple's does.
        #expect(verified.clientHash != Fixture.clientDataHash)
        #expect(verified.clientHash.offsets(of: [0xEF, 0xBF, 0xBD]) != nil)
        #expect(device.receipt(for: keyID) == refreshed)

        // As Apple's 304: not before Not Before; afterwards a new one.
        #expect(throws: SoftwareAppleError(.notModified, "")) {
            _ = try device.refreshReceipt(for: keyID, at: later.addingTimeInterval(3_600))
        }
        let next = try device.refreshReceipt(for: keyID, riskMetric: 8, at: later.addingTimeInterval(2 * 86_400))
        #expect(next != refreshed)
        #expect(try Receipt.parseUnverified(next).1.token == first.token)
    }

    /// Apple writes a receipt's times to the millisecond without the fraction's trailing zeros
    /// (`2020-11-27T22:41:40.46Z` in a real receipt), and so does the software Apple: a whole second has no fraction.
    @Test(
        arguments: [
            (460, "2026-04-12T14:20:00.46Z", "2026-04-13T14:20:00.46Z", "2026-07-11T14:20:00.46Z"),
            (500, "2026-04-12T14:20:00.5Z", "2026-04-13T14:20:00.5Z", "2026-07-11T14:20:00.5Z"),
            (50, "2026-04-12T14:20:00.05Z", "2026-04-13T14:20:00.05Z", "2026-07-11T14:20:00.05Z"),
            (5, "2026-04-12T14:20:00.005Z", "2026-04-13T14:20:00.005Z", "2026-07-11T14:20:00.005Z"),
            (801, "2026-04-12T14:20:00.801Z", "2026-04-13T14:20:00.801Z", "2026-07-11T14:20:00.801Z"),
            (0, "2026-04-12T14:20:00Z", "2026-04-13T14:20:00Z", "2026-07-11T14:20:00Z"),
        ] as [(Int64, String, String, String)])
    func receiptTimesAreWrittenAsApplesAre(
        milliseconds: Int64, created: String, notBefore: String, expires: String
    ) async throws {
        let (_, keyID, receipt) = try Self.attestReceipt()
        // Fixture.time is a whole second: the ATTEST receipt's times have no fraction.
        #expect(try Self.times(receipt) == ["2026-04-12T13:20:00Z", nil, "2026-07-11T13:20:00Z"])

        let time = Date(timeIntervalSince1970: Double(1_776_003_600_000 + milliseconds) / 1_000)
        let refreshed = try Fixture.apple.refresh(receipt, at: time)
        #expect(try Self.times(refreshed) == [created, notBefore, expires])
        // AttestKit reads them back to the millisecond.
        let verified = try await ReceiptVerifier(anchor: Fixture.apple.trustAnchors.receipt).verify(
            refreshed, appID: Fixture.appID, keyID: keyID, expectedType: .receipt, environment: .development,
            maximumAge: 300, at: time)
        func inMilliseconds(_ date: Date?) -> Int64? {
            date.map { Int64(($0.timeIntervalSince1970 * 1_000).rounded()) }
        }
        let createdAt = 1_776_003_600_000 + milliseconds
        #expect(inMilliseconds(verified.creationTime) == createdAt)
        #expect(inMilliseconds(verified.notBefore) == createdAt + 86_400_000)
        #expect(inMilliseconds(verified.expirationTime) == createdAt + 90 * 86_400_000)
    }

    @Test func refreshRefusesReceiptsItDidNotSign() throws {
        let (_, _, receipt) = try Self.attestReceipt()
        let other = try SoftwareApple(seed: Array("another software Apple".utf8), at: Fixture.time)
        #expect(throws: SoftwareAppleError(.receiptNotRecognized, "")) { _ = try other.refresh(receipt) }
        #expect(throws: SoftwareAppleError(.receiptNotRecognized, "")) {
            _ = try Fixture.apple.refresh(receipt.flipping(receipt.count / 3))
        }
        #expect(throws: SoftwareAppleError(.invalidInput, "")) { _ = try Fixture.apple.refresh(receipt, riskMetric: -1) }
        #expect(throws: SoftwareAppleError(.invalidInput, "")) {
            _ = try Fixture.apple.refresh(receipt, fault: .expiredLeaf)
        }
    }
}
