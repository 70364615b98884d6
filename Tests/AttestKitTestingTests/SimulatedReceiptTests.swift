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
        let (device, keyID, _) = try Self.attestReceipt()
        let later = Fixture.time.addingTimeInterval(3_600)
        let refreshed = try device.refreshReceipt(for: keyID, riskMetric: 7, at: later)
        #expect(try Self.fieldOrder(refreshed) == [17, 6, 2, 3, 4, 5, 7, 12, 19, 21])
        let verified = try await ReceiptVerifier(anchor: Fixture.apple.trustAnchors.receipt).verify(
            refreshed, appID: Fixture.appID, keyID: keyID, expectedType: .receipt, environment: .development,
            maximumAge: 300, at: later)
        #expect(verified.riskMetric == 7)
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
