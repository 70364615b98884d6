import AttestKit
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// Every fault is rejected with the error code, and so the check, it names.
@Suite struct FaultTests {
    @Test(arguments: SoftwareAppleFault.allCases.filter { $0.targets.contains(.attestation) })
    func attestationFault(_ fault: SoftwareAppleFault) async throws {
        let device = Fixture.device()
        let keyID = device.generateKey()
        let object = try device.attestKey(keyID, clientDataHash: Fixture.clientDataHash, fault: fault, at: Fixture.time)
        let error = await Fixture.rejection {
            _ = try await Fixture.verifier(.production).verify(
                object, keyID: keyID, clientData: .challenge(Fixture.challenge), at: Fixture.time)
        }
        #expect(error?.code == fault.expectedCode, "\(fault): \(String(describing: error))")
        #expect(error?.check == fault.expectedCheck)
    }

    @Test(arguments: SoftwareAppleFault.allCases.filter { $0.targets.contains(.assertion) })
    func assertionFault(_ fault: SoftwareAppleFault) async throws {
        let (device, keyID, _) = try Fixture.attested()
        let clientData = Array("POST /transfer".utf8)
        _ = try device.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData)))
        let stored = try #require(device.counter(for: keyID))
        let assertion = try device.generateAssertion(
            keyID, clientDataHash: Array(SHA256.hash(data: clientData)), fault: fault)
        let publicKey = try #require(device.publicKey(for: keyID))
        await Fixture.expect(fault.expectedCode) {
            _ = try AssertionVerifier().verify(
                assertion, publicKey: publicKey, appID: Fixture.appID, clientData: .clientData(clientData),
                previousCounter: stored)
        }
    }

    @Test(arguments: SoftwareAppleFault.allCases.filter { $0.targets.contains(.receipt) })
    func receiptFault(_ fault: SoftwareAppleFault) async throws {
        let (device, keyID, _) = try Fixture.attested()
        let refreshed = try device.refreshReceipt(for: keyID, fault: fault, at: Fixture.time)
        await Fixture.expect(fault.expectedCode) {
            _ = try await ReceiptVerifier(anchor: Fixture.apple.trustAnchors.receipt).verify(
                refreshed, appID: Fixture.appID, keyID: keyID, expectedType: .receipt, maximumAge: nil,
                at: Fixture.time)
        }
        // A faulty receipt is not kept in place of the good one.
        #expect(device.receipt(for: keyID) != refreshed)
    }

    @Test func everyFaultHasATargetAndAStableName() {
        for fault in SoftwareAppleFault.allCases {
            #expect(!fault.targets.isEmpty)
            #expect(SoftwareAppleFault(rawValue: fault.description) == fault)
        }
        #expect(SoftwareAppleFault.allCases.count == 12)
    }
}
