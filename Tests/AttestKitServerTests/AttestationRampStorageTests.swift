import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Synchronization
import Testing

/// The attestation ramp's daily ceiling when the store fails to keep a challenge.
@Suite("Attestation ramp and storage failures")
struct AttestationRampStorageTests {
    @Test("a challenge the store could not keep (503) does not spend the day's ceiling")
    func failedIssueKeepsTheCeiling() async throws {
        let failures = Mutex(1)
        let store = CountingStore(
            MemoryAttestationStore(),
            beforeInsertChallenge: { () async throws(StoreError) in
                let fail = failures.withLock { remaining in
                    defer { remaining = max(0, remaining - 1) }
                    return remaining > 0
                }
                if fail { throw StoreError(.storageUnavailable, "the database is gone") }
            })
        var configuration = AttestKitApplication.Configuration(
            appIDs: [Fixture.appID], environments: .development, trustAnchors: Fixture.apple.trustAnchors,
            rateLimits: .init(attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 0, authFailuresPerIP: 0))
        configuration.ramp = AttestationRamp(dailyCeiling: 1)
        let application = try AttestKitApplication(configuration: configuration, store: store)
        func ask(_ byte: UInt8) async throws(FlowError) -> ChallengeResponse {
            try await application.issueChallenge(
                ChallengeRequest(purpose: "attest", keyId: Data(repeating: byte, count: 32).base64EncodedString()),
                client: "10.0.0.\(byte)")
        }
        let failed = await #expect(throws: FlowError.self) { try await ask(1) }
        #expect(failed?.code.rawValue == "storage_unavailable")
        // The ceiling's one attestation of the day is still there; then it is spent.
        #expect(try await ask(2).purpose == "attest")
        let deferred = await #expect(throws: FlowError.self) { try await ask(3) }
        #expect(deferred?.code == .attestationDeferred)
    }
}

extension AttestationRampStorageTests {
    @Test("an attestation over a challenge given before the ramp was on registers: its Apple attestation is spent")
    func challengeFromBeforeTheRamp() async throws {
        let store = MemoryAttestationStore()
        let limits = AttestKitApplication.Configuration.RateLimits(
            attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 0, authFailuresPerIP: 0)
        var configuration = AttestKitApplication.Configuration(
            appIDs: [Fixture.appID], environments: .development, trustAnchors: Fixture.apple.trustAnchors,
            rateLimits: limits)
        // A replica still without the ramp gives the challenge; one with it (1 %) receives the attestation.
        let before = try AttestKitApplication(configuration: configuration, store: store)
        configuration.ramp = AttestationRamp(share: 1)
        let after = try AttestKitApplication(configuration: configuration, store: store)
        let device = SimulatedDevice(
            apple: Fixture.apple, configuration: .init(appID: Fixture.appID, environment: .development))
        var keyID = device.generateKey()
        while configuration.ramp.admits(appID: Fixture.appID, keyID: keyID) { keyID = device.generateKey() }
        let challenge = try await before.issueChallenge(
            ChallengeRequest(purpose: "attest", keyId: keyID.base64), client: "10.0.0.1")
        let bytes = try #require(Data(base64Encoded: challenge.challenge))
        let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
        let registered = try await after.registerAttestation(
            AttestationRequest(
                keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(),
                challengeId: challenge.challengeId),
            client: "10.0.0.1")
        #expect(registered.keyId == keyID.base64)
        // A new install outside the share is still deferred where the ramp decides: at its challenge.
        let deferred = await #expect(throws: FlowError.self) {
            _ = try await after.issueChallenge(
                ChallengeRequest(purpose: "attest", keyId: keyID.base64), client: "10.0.0.2")
        }
        #expect(deferred?.code == .attestationDeferred)
    }
}
