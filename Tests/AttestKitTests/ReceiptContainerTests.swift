import Crypto
import Foundation
import SwiftASN1
import Testing

@testable import AttestKit

/// Container shapes the real vectors lack, signed by a test CA: the textbook signed-attributes signature,
/// digest mismatches under a valid signature, and structures Apple never sends.
@Suite struct ReceiptContainerTests {
    static let signer = SyntheticReceipts.shared
    static let appID = "TEAM123456.com.example.app"

    static func verify(_ bytes: [UInt8], keyID: KeyID? = nil) async throws -> Receipt {
        try await ReceiptVerifier(anchor: signer.anchor).verify(
            bytes, appID: AppID(appID), keyID: keyID ?? signer.keyID, expectedType: .receipt,
            environment: .development, maximumAge: 300, at: SyntheticReceipts.validTime)
    }

    static func receipt(_ options: SyntheticReceipts.Options = .init()) throws -> [UInt8] {
        try signer.receipt(payload: SyntheticReceipts.payload(signer.fields()), options: options)
    }

    @Test(arguments: [
        (SyntheticReceipts.Attributes.none, ReceiptContainer.SignedMessage.content),
        (.signed, .signedAttributes),
        (.signedOverContent, .contentDespiteSignedAttributes),
    ])
    func eachSignatureFormVerifies(
        _ attributes: SyntheticReceipts.Attributes,
        _ expected: ReceiptContainer.SignedMessage
    ) async throws {
        let bytes = try Self.receipt(.init(attributes: attributes))
        let container = try ReceiptContainer(berEncoded: bytes)
        #expect(container.encoding == .definiteLength)
        #expect(try container.verifySignature() == expected)

        let receipt = try await Self.verify(bytes)
        #expect(receipt.appID == Self.appID)
        #expect(receipt.riskMetric == 7)
        #expect(receipt.environment == "sandbox")
        #expect(ReceiptTests.milliseconds(receipt.creationTime) == ReceiptTests.milliseconds("2025-06-15T10:00:00.25Z"))
        #expect(receipt.attestedCertificateDER == Self.signer.credentialDER)
    }

    /// With textbook signed attributes the signature does not cover the content: only the digest binds it.
    @Test(arguments: [SyntheticReceipts.Attributes.signed, .signedOverContent])
    func aDigestOfOtherContentIsRejected(_ attributes: SyntheticReceipts.Attributes) async throws {
        let other = try SyntheticReceipts.payload(Self.signer.fields(creationTime: "2025-06-15T10:00:01Z"))
        let bytes = try Self.receipt(.init(attributes: attributes, messageDigest: Array(SHA256.hash(data: other))))
        await #expect(throws: AttestKitError.code(.receiptDigestMismatch)) { try await Self.verify(bytes) }
    }

    @Test func signedAttributesWithoutAMessageDigestAreRejected() async throws {
        let bytes = try Self.receipt(.init(attributes: .signed, includeMessageDigest: false))
        await #expect(throws: AttestKitError.code(.receiptMalformed)) { try await Self.verify(bytes) }
    }

    @Test func structuresAppleNeverSendsAreRejected() async throws {
        let shapes: [SyntheticReceipts.Options] = [
            .init(certificateCopies: 3),  // 9 certificates, above the cap of 8
            .init(signerInfoCount: 2),
            .init(signerInfoCount: 0),
            .init(includeCRLs: true),
            .init(digestAlgorithm: [2, 16, 840, 1, 101, 3, 4, 2, 2]),  // SHA-384
            .init(signatureAlgorithm: [1, 2, 840, 10_045, 4, 3, 3]),  // ecdsa-with-SHA384
        ]
        for options in shapes {
            await #expect(throws: AttestKitError.code(.receiptMalformed)) {
                try await Self.verify(Self.receipt(options))
            }
        }
        // Two copies of each certificate are within the cap and harmless.
        _ = try await Self.verify(Self.receipt(.init(certificateCopies: 2)))
    }

    @Test func theAttestedKeyIsCheckedAgainstTheCertificate() async throws {
        let otherKey = KeyID(publicKey: P256.Signing.PrivateKey().publicKey)
        await #expect(throws: AttestKitError.code(.receiptKeyMismatch)) {
            try await Self.verify(Self.receipt(), keyID: otherKey)
        }
    }

    @Test func anUnparseableAttestedCertificateIsMalformed() async throws {
        let fields = Self.signer.fields().map { $0.0 == 3 ? (3, Array($0.1.dropLast())) : $0 }
        let bytes = try Self.signer.receipt(payload: SyntheticReceipts.payload(fields))
        await #expect(throws: AttestKitError.code(.receiptMalformed)) { try await Self.verify(bytes) }
    }

    @Test func theRealAppleAnchorDoesNotTrustTheTestCA() async throws {
        await #expect(throws: AttestKitError.code(.receiptCertificateUntrusted)) {
            try await ReceiptVerifier().verify(
                Self.receipt(), appID: AppID(Self.appID), keyID: Self.signer.keyID, maximumAge: nil,
                at: SyntheticReceipts.validTime)
        }
    }
}
