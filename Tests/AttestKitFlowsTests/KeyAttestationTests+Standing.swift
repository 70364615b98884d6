import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import Testing

extension KeyAttestationTests {
    /// A key stranded by a configuration change (its App ID or environment no longer accepted) is refused at its
    /// next assertion; its app key certificate and its bound app key must stop counting with it.
    @Test(
        "a key whose App ID or environment is no longer accepted: its certificate is inactive, its app key refused",
        arguments: FlowBench.strandings)
    func strandedKeyEarnsNothing(acceptance: KeyAcceptance, code: String) async throws {
        let (authority, _) = try Self.authority()
        let bench = try FlowBench()
        let before = KeyAttestation(
            registrar: bench.registrar(), authority: authority,
            keyStanding: KeyStanding(acceptance: KeyAcceptance(appIDs: [FlowBench.appID], environments: .development)))
        let after = KeyAttestation(
            registrar: bench.registrar(), authority: authority, keyStanding: KeyStanding(acceptance: acceptance))
        let device = bench.device()
        let appKey = Self.appKey()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        let registered = try await before.register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: Date())
        let certificate = try #require(registered.certificate)
        #expect(try await before.introspect(certificate: certificate, now: Date()).active)
        #expect(try await before.requireBoundAppKey(appKey, of: device.keyID).keyID == device.keyID)

        #expect(try await after.introspect(certificate: certificate, now: Date()) == .inactive)
        let error = await #expect(throws: FlowError.self) {
            try await after.requireBoundAppKey(appKey, of: device.keyID)
        }
        #expect(error?.code.rawValue == code && error?.kind.httpStatus == 403)
    }
}
