import Foundation
import SwiftASN1
import Testing
import X509

@testable import AttestKit

/// The 33 real receipts, verified end to end, and the verifier's policy checks on them.
@Suite struct ReceiptTests {
    static let vectors = TestVectors.kind("receipt")

    /// A 2024 ATTEST receipt (indefinite length), signer valid 2024-02-27T18:39:52Z → 2025-03-28T18:39:51Z.
    static let attest2024 = TestVectors.named("oliverbinns_stmt_receipt_ATTEST")
    /// A 2020 RECEIPT with signedAttrs whose signature covers the raw content.
    static let quirk2020 = TestVectors.named("veehaitch_hist_2020-09-12_Vki4bB_receipt_RECEIPT")

    /// swift-asn1 only reads PEM with 64-character lines; the G3 root once had 76.
    @Test func pinnedAnchorsLoad() throws {
        let g3 = try TrustAnchor.appleRootCAG3()
        let appAttestation = try TrustAnchor.appAttestationRoot()
        #expect(Hex.encode(g3.sha256) == TrustAnchor.appleRootCAG3SHA256.lowercased())
        #expect(Hex.encode(appAttestation.sha256) == TrustAnchor.appAttestationRootSHA256.lowercased())
    }

    /// Every real receipt, standalone or embedded in an attestation, is signed by a certificate marked as Apple's
    /// receipt signer under a CA marked as Apple's receipt CA: the markers the verifier requires.
    @Test func everyRealReceiptCarriesApplesMarkers() throws {
        var receipts = Self.vectors.map(\.bytes)
        for vector in TestVectors.kind("attestation") {
            if let receipt = try? AttestationObject(bytes: vector.bytes).receipt { receipts.append(receipt) }
        }
        // 33 standalone, 73 embedded (one attestation, a reassembly, has none); 78 distinct.
        #expect(receipts.count == 106)
        #expect(Set(receipts).count == 78)
        for receipt in receipts {
            let container = try ReceiptContainer(berEncoded: receipt)
            let intermediate = try #require(container.certificates.first { $0.subject == container.signer.issuer })
            #expect(container.signer.extensions.contains { $0.oid == MarkerExtensionPolicy.appleReceiptSigner })
            #expect(intermediate.extensions.contains { $0.oid == MarkerExtensionPolicy.appleReceiptCA })
        }
    }

    @Test(arguments: vectors)
    func vectorVerifiesWithExpectedFields(_ vector: TestVector) async throws {
        let fields = try #require(vector.fields)
        let receipt = try await Self.verify(vector, expectedType: fields.type.flatMap(Receipt.ReceiptType.init))

        #expect(receipt.type.rawValue == fields.type)
        #expect(receipt.appID == fields.appId)
        #expect(receipt.appID == vector.appId)
        #expect(receipt.environment == fields.environment)
        #expect(receipt.riskMetric == fields.riskMetric)
        #expect(Self.milliseconds(receipt.creationTime) == fields.creationTime.flatMap(Self.milliseconds))
        #expect(receipt.notBefore.map(Self.milliseconds) == fields.notBefore.flatMap(Self.milliseconds))
        #expect(receipt.expirationTime.map(Self.milliseconds) == fields.expirationTime.flatMap(Self.milliseconds))
        // The vectors hold the token either as is (88 characters) or Base64 encoded once more (120).
        let token = try #require(fields.token)
        #expect(token.count == 120 ? Base64.encode(Array(receipt.token.utf8)) == token : receipt.token == token)
        #expect(receipt.bytes == vector.bytes)
        // Field 4 is a 32-byte client data hash in ATTEST receipts, and mangled (54 or 56 bytes) in RECEIPTs.
        #expect(receipt.type == .attest ? receipt.clientHash.count == 32 : [54, 56].contains(receipt.clientHash.count))
        #expect(!receipt.description.contains(receipt.token))
    }

    /// Both encodings and both signature forms of the real data are exercised, in the known numbers.
    @Test func vectorsCoverBothEncodingsAndSignaturePaths() throws {
        var encodings: [ReceiptContainer.Encoding: Int] = [:]
        var paths: [ReceiptContainer.SignedMessage: Int] = [:]
        for vector in Self.vectors {
            let container = try ReceiptContainer(berEncoded: vector.bytes)
            encodings[container.encoding, default: 0] += 1
            paths[try container.verifySignature(), default: 0] += 1
            // Apple's receipts carried signedAttrs from August 2020 until some time before 2020-10-22.
            let created = try #require(vector.fields?.creationTime)
            #expect((container.signedAttributes != nil) == (created < "2020-10-22"))
        }
        #expect(encodings == [.indefiniteLength: 29, .definiteLength: 4])
        #expect(paths == [.content: 26, .contentDespiteSignedAttributes: 7])
    }

    @Test func wrongAppIDIsRejected() async throws {
        await #expect(throws: AttestKitError.code(.receiptAppIdMismatch)) {
            try await Self.verify(Self.attest2024, appID: AppID("Z86DH46P79.uk.co.oliverbinns.other"))
        }
    }

    @Test func wrongKeyIDIsRejected() async throws {
        await #expect(throws: AttestKitError.code(.receiptKeyMismatch)) {
            try await Self.verify(Self.attest2024, keyID: KeyID(bytes: [UInt8](repeating: 7, count: 32)))
        }
    }

    @Test func wrongTypeIsRejected() async throws {
        await #expect(throws: AttestKitError.code(.receiptTypeUnexpected)) {
            try await Self.verify(Self.attest2024, expectedType: .receipt)
        }
        await #expect(throws: AttestKitError.code(.receiptTypeUnexpected)) {
            try await Self.verify(Self.quirk2020, expectedType: .attest)
        }
    }

    @Test func wrongEnvironmentIsRejected() async throws {
        await #expect(throws: AttestKitError.code(.environmentMismatch)) {
            try await Self.verify(Self.attest2024, environment: .production)
        }
        let production = TestVectors.named("uebelack_production_receipt_ATTEST")
        await #expect(throws: AttestKitError.code(.environmentMismatch)) {
            try await Self.verify(production, environment: .development)
        }
    }

    /// The signer chain is judged at the receipt's creation time (the moment Apple signed), to the second,
    /// with leeway; the synthetic signer is valid from 2025-01-01 to 2026-01-01.
    @Test(
        arguments: [
            ("2025-12-31T23:59:59Z", 0.0, nil),
            ("2026-01-01T00:00:01Z", 0.0, AttestKitError.Code.receiptCertificateExpired),
            ("2026-01-01T00:00:59Z", 60.0, nil), ("2026-01-01T00:01:01Z", 60.0, .receiptCertificateExpired),
            ("2025-01-01T00:00:01Z", 0.0, nil), ("2024-12-31T23:59:59Z", 0.0, .receiptCertificateNotYetValid),
            ("2024-12-31T23:59:01Z", 60.0, nil), ("2024-12-31T23:58:59Z", 60.0, .receiptCertificateNotYetValid),
        ] as [(String, TimeInterval, AttestKitError.Code?)])
    func signerValidityIsJudgedAtTheCreationTime(creation: String, leeway: TimeInterval, failure: AttestKitError.Code?)
        async throws
    {
        let synthetic = SyntheticReceipts.shared
        let bytes = try synthetic.receipt(payload: SyntheticReceipts.payload(synthetic.fields(creationTime: creation)))
        // Verified a day later: the signer's window is judged at the creation time, not at the verification time.
        let time = try #require(TestVectors.parseDate(creation)).addingTimeInterval(86_400)
        let verify = {
            try await ReceiptVerifier(anchor: synthetic.anchor, leeway: leeway).verify(
                bytes, appID: try AppID("TEAM123456.com.example.app"), keyID: synthetic.keyID, maximumAge: nil,
                at: time)
        }
        guard let failure else {
            _ = try await verify()
            return
        }
        let error = await #expect(throws: AttestKitError.code(failure)) { try await verify() }
        #expect(abs((error?.secondsOutside ?? 0) - 1) < 0.001)
    }

    /// The signer's verified signature is cached per process; its validity window and its bytes are still
    /// checked on every call.
    @Test func aCachedSignerIsStillCheckedForTimeAndTampering() async throws {
        let synthetic = SyntheticReceipts.shared
        let verifier = ReceiptVerifier(anchor: synthetic.anchor, leeway: 0)
        let appID = try AppID("TEAM123456.com.example.app")
        let receipt = { (creation: String) in
            try synthetic.receipt(payload: SyntheticReceipts.payload(synthetic.fields(creationTime: creation)))
        }
        let verify = { (bytes: [UInt8]) in
            try await verifier.verify(
                bytes, appID: appID, keyID: synthetic.keyID, maximumAge: nil, at: SyntheticReceipts.validTime)
        }
        _ = try await verify(try receipt("2025-06-15T10:00:00Z"))
        _ = try await verify(try receipt("2025-06-15T10:00:00Z"))
        await #expect(throws: AttestKitError.code(.receiptCertificateExpired)) {
            try await verify(try receipt("2026-01-01T00:00:01Z"))
        }
        var serializer = DER.Serializer()
        try serializer.serialize(synthetic.signer)
        let signerDER = serializer.serializedBytes
        var tampered = try receipt("2025-06-15T10:00:00Z")
        let start = try #require(
            (0...(tampered.count - signerDER.count)).first { tampered[$0..<$0 + signerDER.count].elementsEqual(signerDER) })
        tampered[start + signerDER.count - 1] ^= 0x01  // last byte of the signer certificate's signature
        await #expect(throws: AttestKitError.self) { try await verify(tampered) }
    }

    /// A stored receipt stays verifiable after Apple rotates the signing certificate: the verification time
    /// governs only the maximum-age check.
    @Test func aStoredReceiptVerifiesAfterItsSignerExpired() async throws {
        let signerNotAfter = try #require(TestVectors.parseDate("2025-03-28T18:39:51Z"))
        _ = try await Self.verify(Self.attest2024, at: signerNotAfter.addingTimeInterval(86_400 * 365))
        await #expect(throws: AttestKitError.code(.receiptTooOld)) {
            try await Self.verify(Self.attest2024, maximumAge: 300, at: signerNotAfter.addingTimeInterval(86_400 * 365))
        }
    }

    /// One real receipt's source once verified it at a moment 60.466 s before its creation time: beyond the
    /// leeway, so a verifier refuses it then, as from the future, and accepts it once Apple has made it. The
    /// shared vector's `verifyAt` now follows the creation; the conformance runner takes the same path
    /// (`ConformanceTests.aVerificationBeforeTheReceiptIsRefusedOnEveryPath`).
    @Test func aRealReceiptIsRefusedBeforeItsCreation() async throws {
        let vector = TestVectors.named("veehaitch_ios-14.2_receipt2_RECEIPT")
        let verifyAt = try #require(TestVectors.parseDate("2020-11-21T22:15:05Z"))
        let error = await #expect(throws: AttestKitError.code(.receiptFromFuture)) {
            try await Self.verify(vector, at: verifyAt)
        }
        #expect(abs((error?.secondsOutside ?? 0) - 0.466) < 0.001)
        _ = try await Self.verify(vector, at: verifyAt.addingTimeInterval(1))
        _ = try await Self.verify(vector)
    }

    @Test func maximumAgeBoundaries() async throws {
        // Created 2024-10-26T09:35:00.542Z; maximum age 300 s, leeway 60 s.
        let created = Date(timeIntervalSince1970: 1_729_935_300.542)
        _ = try await Self.verify(Self.attest2024, maximumAge: 300, at: created.addingTimeInterval(360 - 1))
        let old = await #expect(throws: AttestKitError.code(.receiptTooOld)) {
            try await Self.verify(Self.attest2024, maximumAge: 300, at: created.addingTimeInterval(360 + 1))
        }
        #expect(abs((old?.secondsOutside ?? 0) - 1) < 0.001)

        _ = try await Self.verify(Self.attest2024, maximumAge: 300, at: created.addingTimeInterval(-60 + 1))
        let early = await #expect(throws: AttestKitError.code(.receiptFromFuture)) {
            try await Self.verify(Self.attest2024, maximumAge: 300, at: created.addingTimeInterval(-60 - 1))
        }
        #expect(abs((early?.secondsOutside ?? 0) - 1) < 0.001)
        // Without a maximum age, a stored receipt verifies long after its creation.
        _ = try await Self.verify(Self.attest2024, maximumAge: nil, at: created.addingTimeInterval(86_400 * 100))
    }

    @Test func anotherAnchorIsUntrusted() async throws {
        let verifier = ReceiptVerifier(anchor: try TrustAnchor.appAttestationRoot())
        await #expect(throws: AttestKitError.code(.receiptCertificateUntrusted)) {
            try await Self.verify(Self.attest2024, with: verifier)
        }
    }

    @Test func aKnownCredentialCertificateSkipsOnlyTheKeyCheck() async throws {
        let vector = Self.attest2024
        let receipt = try await Self.verify(vector)
        let otherKey = try KeyID(bytes: [UInt8](repeating: 7, count: 32))
        let verifier = try ReceiptVerifier()
        let time = try #require(vector.verificationTime)
        // The caller vouches that this certificate holds the key, so no parsing happens and the key is not compared.
        _ = try await verifier.verify(
            vector.bytes, appID: AppID(#require(vector.appId)), keyID: otherKey,
            attestedCertificateDER: receipt.attestedCertificateDER, maximumAge: nil, at: time)
        await #expect(throws: AttestKitError.code(.receiptKeyMismatch)) {
            try await verifier.verify(
                vector.bytes, appID: AppID(#require(vector.appId)), keyID: otherKey,
                attestedCertificateDER: Array(receipt.attestedCertificateDER.dropLast()), maximumAge: nil, at: time)
        }
    }

    // MARK: - Helpers

    @discardableResult
    static func verify(
        _ vector: TestVector,
        with verifier: ReceiptVerifier? = nil,
        bytes: [UInt8]? = nil,
        appID: AppID? = nil,
        keyID: KeyID? = nil,
        expectedType: Receipt.ReceiptType? = nil,
        environment: AppAttestEnvironment? = nil,
        maximumAge: TimeInterval? = nil,
        at time: Date? = nil
    ) async throws -> Receipt {
        let verifier = try verifier ?? ReceiptVerifier()
        let configured = try #require(vector.environment.flatMap(AppAttestEnvironment.init(rawValue:)))
        return try await verifier.verify(
            bytes ?? vector.bytes,
            appID: try appID ?? AppID(#require(vector.appId)),
            keyID: try keyID ?? KeyID(string: #require(vector.keyId)),
            expectedType: expectedType,
            environment: environment ?? configured,
            maximumAge: maximumAge,
            at: try time ?? #require(vector.receiptVerificationTime))
    }

    /// Milliseconds since 1970 of a date.
    static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// Milliseconds since 1970 of `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, read independently of the library's parser.
    static func milliseconds(_ text: String) -> Int64? {
        let parts = text.dropLast().split(separator: ".", maxSplits: 1)
        guard text.hasSuffix("Z"), let whole = parts.first,
            let seconds = ISO8601DateFormatter().date(from: whole + "Z")
        else { return nil }
        let fraction = parts.count == 2 ? Int64((parts[1] + "000").prefix(3)) ?? 0 : 0
        return Int64(seconds.timeIntervalSince1970) * 1000 + fraction
    }
}
