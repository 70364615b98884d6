import AttestKit
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// README.md's "Quick start: the library", run as written against a simulated device. One change: the verifier
/// also trusts the software Apple's roots (`trustAnchors:`), since Apple's pinned roots sign only real devices.
@Suite struct ReadmeLibrarySampleTests {
    /// A software Apple of today (the README verifies at the current time) and a device of the README's App ID.
    static func device() throws -> (SoftwareApple, SimulatedDevice) {
        let apple = try SoftwareApple(seed: Array("README quick start".utf8), at: Date())
        let device = SimulatedDevice(
            apple: apple,
            configuration: .init(appID: try AppID("ABCDE12345.com.example.app"), environment: .production))
        return (apple, device)
    }

    @Test("the README's library quick start: attest once, assert per request, a replay is counter_not_increasing")
    func quickStart() async throws {
        let (apple, device) = try Self.device()
        // What the app sends: its key id, and the attestation over SHA-256 of the server's one-time challenge.
        let challengeBytes = Array("one-time challenge from POST /v1/challenges".utf8)
        let keyIdFromApp = device.generateKey().base64
        let attestationObject = try device.attestKey(
            try KeyID(string: keyIdFromApp), clientDataHash: Array(SHA256.hash(data: challengeBytes)))

        // The README, as written (with the software Apple's roots).
        let attestations = AttestationVerifier(
            configuration: try .init(
                appIDs: [try AppID("ABCDE12345.com.example.app")], environments: .production,
                trustAnchors: apple.trustAnchors))
        let attested = try await attestations.verify(
            attestationObject, keyID: try KeyID(string: keyIdFromApp), clientData: .challenge(challengeBytes))
        let storedKey = attested.publicKeyX963
        let storedCounter: UInt32 = 0

        let canonicalRequestBytes = Array("POST /orders {\"item\":42}".utf8)
        let assertionObject = try device.generateAssertion(
            attested.keyID, clientDataHash: Array(SHA256.hash(data: canonicalRequestBytes)))
        let assertion = try AssertionVerifier().verify(
            assertionObject, publicKeyX963: storedKey, appID: attested.appID,
            clientData: .clientData(canonicalRequestBytes), previousCounter: storedCounter)
        #expect(assertion.counter == 1)
        #expect(attested.appID.description == "ABCDE12345.com.example.app")

        // "a replay fails there": the same assertion against the advanced counter.
        let replay = #expect(throws: AttestKitError.self) {
            try AssertionVerifier().verify(
                assertionObject, publicKeyX963: storedKey, appID: attested.appID,
                clientData: .clientData(canonicalRequestBytes), previousCounter: assertion.counter)
        }
        #expect(replay?.code == .counterNotIncreasing)
        #expect(replay?.code.rawValue == "counter_not_increasing")
    }

    @Test("the README's error codes: an attestation over another challenge is nonce_mismatch")
    func anotherChallengeIsNonceMismatch() async throws {
        let (apple, device) = try Self.device()
        let keyID = device.generateKey()
        let attestationObject = try device.attestKey(
            keyID, clientDataHash: Array(SHA256.hash(data: Array("an old challenge".utf8))))
        let attestations = AttestationVerifier(
            configuration: try .init(
                appIDs: [try AppID("ABCDE12345.com.example.app")], environments: .production,
                trustAnchors: apple.trustAnchors))
        let error = await #expect(throws: AttestKitError.self) {
            _ = try await attestations.verify(
                attestationObject, keyID: keyID, clientData: .challenge(Array("the challenge issued".utf8)))
        }
        #expect(error?.code.rawValue == "nonce_mismatch")
    }
}
