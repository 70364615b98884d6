import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import Testing

extension TokenServiceTests {
    @Test("a key unused past keys.expire-after: its session tokens introspect inactive and are not consumed")
    func expiredKeyTokens() async throws {
        let clock = Clock()
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let record = try #require(try await bench.store.key(device.keyID))
        clock.advance(record.lastUsedAt.timeIntervalSince(clock.now))
        let configuration = try Self.configuration()
        let service = TokenService(
            configuration: configuration, store: bench.store, keyStanding: KeyStanding(expiry: 300), now: clock.closure)
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
