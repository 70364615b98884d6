import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import Synchronization
import Testing

/// The attestation ramp's daily ceiling when the store fails to keep a challenge.
@Suite("Attestation ramp and storage failures")
struct AttestationRampStorageTests {
    @Test("a challenge the store could not keep (503) does not spend the day's ceiling")
    func failedIssueKeepsTheCeiling() async throws {
        let failures = Mutex(1)
        let store = CountingStore(MemoryAttestationStore(), beforeInsertChallenge: { () async throws(StoreError) in
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
