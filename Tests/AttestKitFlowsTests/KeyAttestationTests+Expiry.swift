import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import Testing

extension KeyAttestationTests {
    /// What a key earned outlives no expiry: with `keys.expire-after`, a key unused for longer is refused at its
    /// next assertion (`key_expired`), and so are its app key certificate (inactive) and its bound app key.
    @Test("a key unused past keys.expire-after: its certificate introspects inactive and its app key is refused")
    func expiredKeyEarnsNothing() async throws {
        let (authority, _) = try Self.authority()
        let bench = try FlowBench()
        let clock = TokenServiceTests.Clock()
        let flow = KeyAttestation(
            registrar: bench.registrar(), authority: authority, keyStanding: KeyStanding(expiry: 600), now: clock.closure)
        let device = bench.device()
        let appKey = Self.appKey()
        let (attestation, challengeID) = try await Self.attest(bench, device, appKey: appKey)
        let registered = try await flow.register(
            keyID: device.keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: clock.now)
        let certificate = try #require(registered.certificate)

        clock.advance(599)
        #expect(try await flow.introspect(certificate: certificate, now: clock.now).active)
        #expect(try await flow.requireBoundAppKey(appKey, of: device.keyID).keyID == device.keyID)

        clock.advance(2)
        #expect(try await flow.introspect(certificate: certificate, now: clock.now) == .inactive)
        let error = await #expect(throws: FlowError.self) {
            try await flow.requireBoundAppKey(appKey, of: device.keyID)
        }
        #expect(error?.code.rawValue == "key_expired" && error?.kind.httpStatus == 403)

        // Without an expiry the same key still stands.
        let lasting = KeyAttestation(registrar: bench.registrar(), authority: authority, now: clock.closure)
        #expect(try await lasting.introspect(certificate: certificate, now: clock.now).active)
        #expect(try await lasting.requireBoundAppKey(appKey, of: device.keyID).keyID == device.keyID)
    }
}
