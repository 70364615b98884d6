import AttestKit
import AttestKitTesting
import Foundation
import SwiftASN1
import Testing
import X509

/// The Apple ↔ service boundary for receipts: only Apple's receipt signer, under Apple's receipt CA, both known by
/// their marker extensions, signs receipts; every attestation carries one; none is made after the verification time.
@Suite struct ReceiptTrustBoundaryTests {
    static let receipts = ReceiptVerifier(anchor: Fixture.apple.trustAnchors.receipt)

    /// A genuine attestation of a new production key, its receipt, and a refreshed `RECEIPT` an hour later.
    static func genuine() throws -> (keyID: KeyID, object: [UInt8], attest: [UInt8], refreshed: [UInt8]) {
        let (device, keyID, object) = try Fixture.attested()
        let attest = try #require(try AttestationObject(bytes: object).receipt)
        let refreshed = try device.refreshReceipt(for: keyID, at: Fixture.time.addingTimeInterval(3_600))
        return (keyID, object, attest, refreshed)
    }

    static func hasExtension(_ certificate: Certificate, _ oid: ASN1ObjectIdentifier) -> Bool {
        certificate.extensions.contains { $0.oid == oid && !$0.critical }
    }

    @Test("a receipt's App ID is compared byte for byte: a canonically equivalent spelling is another App ID")
    func appIDComparedByBytes() async throws {
        let precomposed = try AppID(teamID: "ABCDE12345", bundleID: "com.example.caf\u{E9}")
        let decomposed = try AppID(teamID: "ABCDE12345", bundleID: "com.example.cafe\u{301}")
        #expect(precomposed.description == decomposed.description)  // Swift's String == says they are one
        #expect(precomposed.rpIDHash != decomposed.rpIDHash)  // App Attest says they are two
        let device = SimulatedDevice(
            apple: Fixture.apple, configuration: .init(appID: precomposed, environment: .production))
        let keyID = device.generateKey()
        let object = try device.attestKey(keyID, clientDataHash: Fixture.clientDataHash, at: Fixture.time)
        let receipt = try #require(try AttestationObject(bytes: object).receipt)
        _ = try await Self.receipts.verify(receipt, appID: precomposed, keyID: keyID, maximumAge: nil, at: Fixture.time)
        await #expect(throws: AttestKitError.code(.receiptAppIdMismatch)) {
            try await Self.receipts.verify(receipt, appID: decomposed, keyID: keyID, maximumAge: nil, at: Fixture.time)
        }
    }

    // MARK: markers

    @Test func softwareAppleMarksItsReceiptCAAndSignerOnly() {
        let apple = Fixture.apple
        #expect(Self.hasExtension(apple.receiptIntermediate, MarkerExtensionPolicy.appleReceiptCA))
        #expect(Self.hasExtension(apple.receiptSigner, MarkerExtensionPolicy.appleReceiptSigner))
        #expect(!Self.hasExtension(apple.receiptIntermediate, MarkerExtensionPolicy.appleReceiptSigner))
        #expect(!Self.hasExtension(apple.receiptSigner, MarkerExtensionPolicy.appleReceiptCA))
        // The App Attest chain stays as it was: no receipt marker anywhere.
        for certificate in [apple.attestationRoot, apple.attestationIntermediate, apple.receiptRoot] {
            #expect(!Self.hasExtension(certificate, MarkerExtensionPolicy.appleReceiptCA))
            #expect(!Self.hasExtension(certificate, MarkerExtensionPolicy.appleReceiptSigner))
        }
    }

    @Test(arguments: ReceiptImpostor.allCases)
    func standaloneReceiptOfAnImpostorSignerIsRejected(_ impostor: ReceiptImpostor) async throws {
        let (keyID, _, attest, refreshed) = try Self.genuine()
        for (receipt, time) in [(attest, Fixture.time), (refreshed, Fixture.time.addingTimeInterval(3_600))] {
            // The genuine receipt verifies (and its links are now cached); the same payload re-signed does not.
            _ = try await Self.receipts.verify(receipt, appID: Fixture.appID, keyID: keyID, maximumAge: nil, at: time)
            let forged = try Fixture.apple.resigning(receipt, as: impostor)
            for attempt in 1...2 {
                await Fixture.expect(impostor.expectedCode, "\(impostor), attempt \(attempt)") {
                    _ = try await Self.receipts.verify(
                        forged, appID: Fixture.appID, keyID: keyID, maximumAge: nil, at: time)
                }
            }
        }
    }

    @Test(arguments: ReceiptImpostor.allCases)
    func attestationWithAReceiptOfAnImpostorSignerIsRejected(_ impostor: ReceiptImpostor) async throws {
        let (keyID, object, attest, _) = try Self.genuine()
        let forged = try SoftwareApple.replacingReceipt(
            in: object, with: try Fixture.apple.resigning(attest, as: impostor))
        for policy in [AttestationVerifier.ReceiptPolicy.require, .verifyIfPresent] {
            let verifier = AttestationVerifier(
                configuration: try .init(
                    appIDs: [Fixture.appID], environments: .both, receiptPolicy: policy,
                    trustAnchors: Fixture.apple.trustAnchors))
            await Fixture.expect(impostor.expectedCode, "\(impostor), \(policy)") {
                _ = try await verifier.verify(
                    forged, keyID: keyID, clientData: .clientDataHash(Fixture.clientDataHash), at: Fixture.time)
            }
        }
    }

    @Test func aLinkVerifiedWithoutAMarkerDoesNotVouchForOne() async throws {
        let (_, _, attest, _) = try Self.genuine()
        let forged = try ReceiptContainer(berEncoded: try Fixture.apple.resigning(attest, as: .signerWithoutMarker))
        let anchor = Fixture.apple.trustAnchors.receipt
        let time = Fixture.time
        // A validator without markers accepts the chain, and caches its links...
        try await ChainValidator(anchor: anchor, codes: .receipt, cachesLeaves: true)
            .validate(leaf: forged.signer, candidates: forged.certificates, at: time, leeway: 0)
        // ...which do not satisfy a validator that requires the markers.
        await Fixture.expect(.receiptSignerNotAuthorized) {
            try await ChainValidator(anchor: anchor, codes: .receipt, markers: .receipt, cachesLeaves: true)
                .validate(leaf: forged.signer, candidates: forged.certificates, at: time, leeway: 0)
        }
    }

    // MARK: receipt required

    /// A verifier with the default receipt policy, or `policy`.
    static func verifier(_ policy: AttestationVerifier.ReceiptPolicy? = nil) throws -> AttestationVerifier {
        let configuration =
            if let policy {
                try AttestationVerifier.Configuration(
                    appIDs: [Fixture.appID], environments: .both, receiptPolicy: policy,
                    trustAnchors: Fixture.apple.trustAnchors)
            } else {
                try AttestationVerifier.Configuration(
                    appIDs: [Fixture.appID], environments: .both, trustAnchors: Fixture.apple.trustAnchors)
            }
        return AttestationVerifier(configuration: configuration)
    }

    @Test(arguments: [nil, []] as [[UInt8]?])
    func attestationWithoutAReceiptIsRejectedByDefault(_ receipt: [UInt8]?) async throws {
        let (keyID, object, _, _) = try Self.genuine()
        let stripped = try SoftwareApple.replacingReceipt(in: object, with: receipt)
        #expect(try AttestationObject(bytes: stripped).receipt == nil)
        #expect(try Self.verifier().configuration.receiptPolicy == .require)
        await Fixture.expect(.receiptMissing) {
            _ = try await Self.verifier().verify(
                stripped, keyID: keyID, clientData: .clientDataHash(Fixture.clientDataHash), at: Fixture.time)
        }
        // Only an explicit opt-out accepts it, and then the key has no receipt.
        for policy in [AttestationVerifier.ReceiptPolicy.verifyIfPresent, .ignore] {
            let accepted = try await Self.verifier(policy).verify(
                stripped, keyID: keyID, clientData: .clientDataHash(Fixture.clientDataHash), at: Fixture.time)
            #expect(accepted.receipt == nil)
        }
    }

    // MARK: future-dated receipts

    @Test(arguments: [nil, 300] as [TimeInterval?])
    func receiptCreatedAfterTheVerificationTimeIsRejected(_ maximumAge: TimeInterval?) async throws {
        let (keyID, _, attest, _) = try Self.genuine()
        let leeway = Self.receipts.leeway
        // Within the leeway: accepted.
        _ = try await Self.receipts.verify(
            attest, appID: Fixture.appID, keyID: keyID, maximumAge: maximumAge,
            at: Fixture.time.addingTimeInterval(-leeway))
        // One second beyond it: rejected, by one second.
        let error = await Fixture.rejection {
            _ = try await Self.receipts.verify(
                attest, appID: Fixture.appID, keyID: keyID, maximumAge: maximumAge,
                at: Fixture.time.addingTimeInterval(-leeway - 1))
        }
        #expect(error?.code == .receiptFromFuture)
        #expect(error?.check == .receipt)
        #expect(abs((error?.secondsOutside ?? 0) - 1) < 0.001)
    }

    @Test func attestationWhoseReceiptIsFromTheFutureIsRejected() async throws {
        let (keyID, object, _, _) = try Self.genuine()
        let verifier = try Self.verifier()
        let leeway = verifier.configuration.leeway
        _ = try await verifier.verify(
            object, keyID: keyID, clientData: .clientDataHash(Fixture.clientDataHash),
            at: Fixture.time.addingTimeInterval(-leeway))
        await Fixture.expect(.receiptFromFuture) {
            _ = try await verifier.verify(
                object, keyID: keyID, clientData: .clientDataHash(Fixture.clientDataHash),
                at: Fixture.time.addingTimeInterval(-leeway - 1))
        }
    }
}
