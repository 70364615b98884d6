import Foundation
import SwiftASN1
import Testing
import X509

@testable import AttestKit

/// Damaged real receipts: truncations, trailing bytes, flipped bits in each signed part.
@Suite struct ReceiptAdversarialTests {
    /// One receipt of each shape: indefinite length, definite length, signedAttrs (both encodings).
    static let shapes = [
        "oliverbinns_stmt_receipt_ATTEST",
        "veehaitch_ios-14.2_receipt2_RECEIPT",
        "veehaitch_hist_2020-09-12_Vki4bB_receipt_RECEIPT",
        "veehaitch_hist_2020-08-23_cMuAh3_receipt_RECEIPT",
    ].map(TestVectors.named)

    @Test(arguments: shapes)
    func everyTruncatedPrefixIsRejected(_ vector: TestVector) async throws {
        let bytes = vector.bytes
        _ = try await ReceiptTests.verify(vector)
        for length in 0..<bytes.count {
            await #expect(throws: AttestKitError.code(.receiptMalformed)) {
                try await ReceiptTests.verify(vector, bytes: Array(bytes.prefix(length)))
            }
        }
    }

    @Test(arguments: shapes)
    func trailingBytesAreRejected(_ vector: TestVector) async throws {
        for trailer: [UInt8] in [[0x00], [0x00, 0x00], [0x30, 0x00], [0xFF]] {
            await #expect(throws: AttestKitError.code(.receiptMalformed)) {
                try await ReceiptTests.verify(vector, bytes: vector.bytes + trailer)
            }
        }
    }

    @Test func oversizedInputIsRejectedBeforeParsing() async throws {
        let vector = Self.shapes[0]
        let padded = vector.bytes + [UInt8](repeating: 0, count: ReceiptContainer.maximumSize)
        await #expect(throws: AttestKitError.code(.inputTooLarge)) {
            try await ReceiptTests.verify(vector, bytes: padded)
        }
    }

    @Test(arguments: shapes)
    func everyBitOfTheSignatureMatters(_ vector: TestVector) async throws {
        let container = try ReceiptContainer(berEncoded: vector.bytes)
        let positions = container.signature.indices
        #expect(positions.count >= 70 && positions.count <= 72)
        for position in positions {
            for bit in 0..<8 {
                await #expect(throws: AttestKitError.code(.receiptSignatureInvalid)) {
                    try await ReceiptTests.verify(vector, bytes: Self.flip(vector.bytes, at: position, bit: bit))
                }
            }
        }
    }

    @Test(arguments: shapes)
    func everyByteOfTheContentMatters(_ vector: TestVector) async throws {
        let container = try ReceiptContainer(berEncoded: vector.bytes)
        let positions = try Self.contentPositions(in: vector.bytes)
        #expect(positions.count == container.content.count)
        for (index, position) in positions.enumerated() {
            await #expect(throws: AttestKitError.code(.receiptSignatureInvalid)) {
                try await ReceiptTests.verify(vector, bytes: Self.flip(vector.bytes, at: position, bit: index % 8))
            }
        }
    }

    @Test(arguments: shapes)
    func everyByteOfTheSignerCertificateMatters(_ vector: TestVector) async throws {
        let container = try ReceiptContainer(berEncoded: vector.bytes)
        var coder = DER.Serializer()
        try coder.serialize(container.signer)
        let positions = try #require(Self.range(of: coder.serializedBytes, in: vector.bytes))
        let rejections: Set<AttestKitError.Code> = [
            .receiptMalformed, .receiptCertificateUntrusted, .receiptCertificateExpired,
            .receiptCertificateNotYetValid, .receiptSignatureInvalid,
        ]
        for (index, position) in positions.enumerated() {
            do {
                _ = try await ReceiptTests.verify(vector, bytes: Self.flip(vector.bytes, at: position, bit: index % 8))
                Issue.record("a flipped bit at offset \(position - positions.lowerBound) of the signer was accepted")
            } catch let error as AttestKitError {
                #expect(rejections.contains(error.code), "offset \(position - positions.lowerBound): \(error)")
            } catch {
                Issue.record("untyped error \(error)")
            }
        }
    }

    /// In the 2020 receipts the signature covers the content only, so the messageDigest attribute is the one
    /// thing tying the signed attributes to it; each of its bits must count.
    @Test func everyBitOfTheMessageDigestMatters() async throws {
        let vector = Self.shapes[2]
        let digest = try #require(try ReceiptContainer(berEncoded: vector.bytes).signedAttributes?.messageDigest)
        #expect(digest.count == 32)
        for position in digest.indices {
            for bit in 0..<8 {
                await #expect(throws: AttestKitError.code(.receiptDigestMismatch)) {
                    try await ReceiptTests.verify(vector, bytes: Self.flip(vector.bytes, at: position, bit: bit))
                }
            }
        }
    }

    // MARK: - Helpers

    static func flip(_ bytes: [UInt8], at position: Int, bit: Int) -> [UInt8] {
        var copy = bytes
        copy[position] ^= 1 << bit
        return copy
    }

    static func range(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard needle.count <= haystack.count else { return nil }
        return (0...(haystack.count - needle.count)).lazy
            .first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
            .map { $0..<($0 + needle.count) }
    }

    /// Offsets in `bytes` of the content octets: one primitive OCTET STRING, or the chunks of a constructed one.
    static func contentPositions(in bytes: [UInt8]) throws -> [Int] {
        let root = try BER.parse(bytes)
        let signedData = try Self.children(Self.children(root)[1])[0]
        let encapsulated = try Self.children(signedData)[2]
        let octets = try Self.children(Self.children(encapsulated)[1])[0]
        let chunks: [ASN1Node] = if case .constructed(let nodes) = octets.content { Array(nodes) } else { [octets] }
        return chunks.flatMap { chunk -> Range<Int> in
            guard case .primitive(let data) = chunk.content else { return 0..<0 }
            return data.indices
        }
    }

    private static func children(_ node: ASN1Node) throws -> [ASN1Node] {
        guard case .constructed(let nodes) = node.content else {
            throw ASN1Error.invalidASN1Object(reason: "primitive")
        }
        return Array(nodes)
    }
}
