import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

/// An App ID as long as App IDs may be (254 bytes) under the per-app attestation budget: its budget's name in the
/// store must fit the store's 256 bytes, or every attestation of the app is refused.
@Suite("Per-app attestation budget of a long App ID")
struct LongAppIDBudgetTests {
    @Test("an app whose App ID is 254 bytes registers under rate-limit.attestations-per-app, and the budget counts")
    func longAppIDRegisters() async throws {
        let appID = try AppID("ABCDE12345.com." + String(repeating: "a", count: 254 - 15))
        #expect(appID.description.utf8.count == 254)
        let store = MemoryAttestationStore()
        let configuration = AttestKitApplication.Configuration(
            appIDs: [appID], environments: .development, trustAnchors: Fixture.apple.trustAnchors,
            rateLimits: .init(attestationsPerIP: 0, attestationsPerApp: 1, challengesPerIP: 0, authFailuresPerIP: 0))
        let application = try AttestKitApplication(configuration: configuration, store: store)
        let device = SimulatedDevice(
            apple: Fixture.apple, configuration: .init(appID: appID, environment: .development))
        func register() async throws(FlowError) -> KeyRecordResponse {
            let keyID = device.generateKey()
            let challenge = try await application.issueChallenge(
                ChallengeRequest(purpose: "attest", keyId: keyID.base64), client: "10.0.0.1")
            let bytes = Data(base64Encoded: challenge.challenge) ?? Data()
            let attestation: [UInt8]
            do {
                attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
            } catch {
                throw FlowError(.internalError, .internalFailure, "the simulated device failed: \(error)")
            }
            return try await application.registerAttestation(
                AttestationRequest(
                    keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(),
                    challengeId: challenge.challengeId),
                client: "10.0.0.1")
        }
        _ = try await register()
        // The budget of one a minute is spent: the second is refused by it, not by the name.
        let refused = await #expect(throws: FlowError.self) { _ = try await register() }
        #expect(refused?.code.rawValue == "rate_limited", "\(String(describing: refused))")
    }
}
