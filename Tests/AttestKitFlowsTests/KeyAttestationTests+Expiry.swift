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
            registrar: bench.registrar(), authority: authority, keyExpiry: 600, now: clock.closure)
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

extension TokenServiceTests {
    @Test("a key unused past keys.expire-after: its session tokens introspect inactive and are not consumed")
    func expiredKeyTokens() async throws {
        let clock = Clock()
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let record = try #require(try await bench.store.key(device.keyID))
        clock.advance(record.lastUsedAt.timeIntervalSince(clock.now))
        let configuration = try Self.configuration()
        let service = TokenService(configuration: configuration, store: bench.store, keyExpiry: 300, now: clock.closure)
        let lasting = TokenService(configuration: configuration, store: bench.store, now: clock.closure)
        var generator = SystemRandomNumberGenerator()
        let first = try service.issue(for: record, using: &generator)
        let second = try service.issue(for: record, using: &generator)

        clock.advance(299)
        #expect(try await service.introspect(first.token).active)
        #expect(try await service.consume(first.token) == first.claims)

        clock.advance(2)
        #expect(try await service.introspect(second.token) == .inactive)
        let error = await #expect(throws: FlowError.self) { try await service.consume(second.token) }
        #expect(error?.code.rawValue == "key_expired" && error?.kind.httpStatus == 403)
        // The token itself is unexpired (a lifetime of 900 s): without an expiry of keys it still counts.
        #expect(try await lasting.introspect(second.token).active)
    }
}
