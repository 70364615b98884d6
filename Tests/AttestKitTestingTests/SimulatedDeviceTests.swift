import AttestKit
import Crypto
import Foundation
import Testing
import X509

@testable import AttestKitTesting

/// A simulated device behaves like `DCAppAttestService`, and AttestKit accepts what it makes only with the
/// software Apple's roots.
@Suite struct SimulatedDeviceTests {
    @Test func keyIDIsSHA256OfTheX963PublicKey() throws {
        let device = Fixture.device()
        let keyID = device.generateKey()
        let publicKey = try #require(device.publicKey(for: keyID))
        #expect(keyID.bytes == Array(SHA256.hash(data: publicKey.x963Representation)))
        #expect(device.counter(for: keyID) == 0)
        #expect(device.keyIDs == [keyID])
    }

    @Test func seededKeysRepeat() {
        var first = SplitMix64(seed: 7)
        var second = SplitMix64(seed: 7)
        #expect(Fixture.device().generateKey(using: &first) == Fixture.device().generateKey(using: &second))
    }

    @Test(arguments: AppAttestEnvironment.allCases)
    func attestationVerifiesWithTheSimulatorsRoots(environment: AppAttestEnvironment) async throws {
        let (device, keyID, object) = try Fixture.attested(environment)
        let result = try await Fixture.verifier(environment == .production ? .production : .development).verify(
            object, keyID: keyID, clientData: .challenge(Fixture.challenge), at: Fixture.time)
        #expect(result.environment == environment)
        #expect(result.appID == Fixture.appID)
        #expect(result.publicKeyX963 == device.publicKey(for: keyID).map { Array($0.x963Representation) })
        #expect(result.osVersion == "18.5")
        #expect(result.counter == 0)
        #expect(result.receipt?.type == .attest)
        #expect(result.receipt?.environment == environment.receiptName)
        #expect(result.authenticatorData.bytes.count == 164)
        #expect(result.authenticatorData.flags.rawValue == 0x40)
        #expect(result.bundleVersion == nil)
        #expect(device.receipt(for: keyID) == result.receipt?.bytes)
    }

    @Test func attestationIsRejectedWithApplesPinnedRoots() async throws {
        let (_, keyID, object) = try Fixture.attested()
        await Fixture.expect(.certificateUntrusted) {
            _ = try await Fixture.verifier(anchors: nil).verify(
                object, keyID: keyID, clientData: .challenge(Fixture.challenge), at: Fixture.time)
        }
    }

    @Test func iOS27AttestationCarriesTheExtensionMap() async throws {
        let (_, keyID, object) = try Fixture.attested(iOS27: true)
        let result = try await Fixture.verifier().verify(
            object, keyID: keyID, clientData: .clientDataHash(Fixture.clientDataHash), at: Fixture.time)
        #expect(result.authenticatorData.bytes.count == 226)  // as Apple's 2026 sample
        #expect(result.authenticatorData.flags.rawValue == 0x40)
        #expect(result.bundleVersion == "1")
        #expect(result.validationCategory == 1)
    }

    @Test func assertionsVerifyAndAdvanceTheCounter() throws {
        let (device, keyID, _) = try Fixture.attested()
        let publicKey = try #require(device.publicKey(for: keyID))
        let verifier = AssertionVerifier()
        var previous: UInt32 = 0
        for request in ["GET /a", "POST /b", "PUT /c"] {
            let clientData = Array(request.utf8)
            let assertion = try device.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData)))
            let parsed = try AssertionObject(bytes: assertion)
            #expect(parsed.authenticatorData.bytes.count == 37)
            #expect(parsed.authenticatorData.flags.rawValue == 0x40)
            let result = try verifier.verify(
                assertion, publicKey: publicKey, appID: Fixture.appID, clientData: .clientData(clientData),
                previousCounter: previous)
            #expect(result.counter == previous + 1)
            #expect(device.counter(for: keyID) == result.counter)
            previous = result.counter
        }
    }

    @Test func aReplayedAssertionFailsOnItsCounter() async throws {
        let (device, keyID, _) = try Fixture.attested()
        let publicKey = try #require(device.publicKey(for: keyID))
        let clientData = Array("GET /balance".utf8)
        let assertion = try device.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData)))
        await Fixture.expect(.counterNotIncreasing) {
            _ = try AssertionVerifier().verify(
                assertion, publicKey: publicKey, appID: Fixture.appID, clientData: .clientData(clientData),
                previousCounter: 1)
        }
    }

    @Test func aCounterCanStartElsewhere() throws {
        let (device, keyID, _) = try Fixture.attested()
        try device.setCounter(41, for: keyID)
        let assertion = try device.generateAssertion(keyID, clientDataHash: [1, 2, 3])
        #expect(try AssertionObject(bytes: assertion).authenticatorData.signCount == 42)
    }

    @Test func theSameKeyAttestedTwiceFailsAsOnADevice() throws {
        let (device, keyID, _) = try Fixture.attested()
        #expect(throws: SoftwareAppleError(.invalidKey, "")) {
            _ = try device.attestKey(keyID, clientDataHash: Fixture.clientDataHash, at: Fixture.time)
        }
    }

    @Test func misuseFailsAsOnADevice() throws {
        let device = Fixture.device()
        let keyID = device.generateKey()
        let stranger = Fixture.device().generateKey()
        #expect(throws: SoftwareAppleError(.invalidKey, "")) {
            _ = try device.generateAssertion(keyID, clientDataHash: [1])  // not attested yet
        }
        #expect(throws: SoftwareAppleError(.invalidKey, "")) {
            _ = try device.attestKey(stranger, clientDataHash: [1], at: Fixture.time)  // another device's key
        }
        #expect(throws: SoftwareAppleError(.invalidInput, "")) {
            _ = try device.attestKey(keyID, clientDataHash: [], at: Fixture.time)
        }
        #expect(throws: SoftwareAppleError(.invalidInput, "")) {
            _ = try device.attestKey(keyID, clientDataHash: [1], fault: .reusedCounter, at: Fixture.time)
        }
        // A refused request leaves the key usable.
        _ = try device.attestKey(keyID, clientDataHash: [1], at: Fixture.time)
    }

    @Test func stateSurvivesSaveAndLoad() async throws {
        let (device, keyID, _) = try Fixture.attested(.development, iOS27: true)
        _ = try device.generateAssertion(keyID, clientDataHash: [9])
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("attestkit-state-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try device.save(to: url)
        try device.save(to: url)  // replaces the file

        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(String(decoding: try Data(contentsOf: url), as: UTF8.self).contains("TEST private keys"))

        let loaded = try SimulatedDevice.load(from: url)
        #expect(loaded.keyIDs == [keyID])
        #expect(loaded.counter(for: keyID) == 1)
        #expect(loaded.configuration == device.configuration)
        #expect(loaded.apple.trustAnchors == device.apple.trustAnchors)
        #expect(loaded.receipt(for: keyID) == device.receipt(for: keyID))
        #expect(throws: SoftwareAppleError(.invalidKey, "")) {
            _ = try loaded.attestKey(keyID, clientDataHash: [1], at: Fixture.time)
        }
        let clientData = Array("after reload".utf8)
        let assertion = try loaded.generateAssertion(keyID, clientDataHash: Array(SHA256.hash(data: clientData)))
        let result = try AssertionVerifier().verify(
            assertion, publicKeyX963: try #require(device.publicKey(for: keyID)).x963Representation,
            appID: Fixture.appID, clientData: .clientData(clientData), previousCounter: 1)
        #expect(result.counter == 2)
    }

    @Test func aFileThatIsNotAStateIsRefused() throws {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("attestkit-not-state-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data("{\"format\": \"something else\"}".utf8).write(to: url)
        #expect(throws: SoftwareAppleError(.invalidState, "")) { _ = try SimulatedDevice.load(from: url) }
    }
}

/// A certificate of an edited state file whose window ends before it begins is refused, never trapped on.
@Suite struct StateCertificateValidityTests {
    @Test func aWindowEndingBeforeItBeginsIsInvalidState() throws {
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName { CommonName("reversed") }
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        func certificate(from notBefore: Date, to notAfter: Date) throws -> Certificate {
            try Certificate(
                version: .v3, serialNumber: .init(), publicKey: .init(key.publicKey), notValidBefore: notBefore,
                notValidAfter: notAfter, issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: .init(), issuerPrivateKey: .init(key))
        }
        let reversed = try certificate(from: start, to: start - 1)
        #expect(throws: SoftwareAppleError(.invalidState, "")) { _ = try reversed.validityRange() }
        #expect(try certificate(from: start, to: start + 1).validityRange() == start...(start + 1))
    }
}
