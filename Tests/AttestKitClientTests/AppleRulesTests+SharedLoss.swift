import AttestKit
@testable import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension AppleRulesTests {
    /// A device provider whose assertions, once ``hold(_:)`` is called, wait until that many have been asked for
    /// and then go on together: requests that sign at the same moment, before any of them learns the outcome.
    final class RendezvousProvider: AppAttestProvider, Sendable {
        let inner: SimulatedAppAttestProvider
        private let waiting = Mutex<(expected: Int, parked: [CheckedContinuation<Void, Never>])>((0, []))

        init(_ inner: SimulatedAppAttestProvider) { self.inner = inner }

        /// Holds the next `count` assertions until all of them are asked for.
        func hold(_ count: Int) { waiting.withLock { $0.expected = count } }

        var isSupported: Bool { inner.isSupported }
        func generateKey() async throws -> String { try await inner.generateKey() }
        func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
            try await inner.attestKey(keyID, clientDataHash: clientDataHash)
        }
        func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
            await withCheckedContinuation { continuation in
                let released: [CheckedContinuation<Void, Never>] = waiting.withLock { state in
                    guard state.expected > 0 else { return [continuation] }
                    state.parked.append(continuation)
                    guard state.parked.count == state.expected else { return [] }
                    defer { state = (0, []) }
                    return state.parked
                }
                for parked in released { parked.resume() }
            }
            return try await inner.generateAssertion(keyID, clientDataHash: clientDataHash)
        }
    }

    @Test("two requests signing when the device loses a proven key share one replacement, and both are served")
    func sharedKeyLoss() async throws {
        let simulated = SimulatedAppAttestProvider(
            device: SimulatedDevice(
                apple: EndToEndTests.apple,
                configuration: .init(appID: ServiceProcess.appID, environment: .development)))
        let provider = RendezvousProvider(simulated)
        let service = FakeService()
        let clock = TestClock()
        let manager = AppAttestManager(
            provider: provider, keyStore: MemoryKeyIDStore(),
            service: AttestKitService(baseURL: FakeService.serviceURL, transport: service),
            now: { clock.now }, random: { 0.999 })
        let client = AttestKitHTTPClient(
            manager: manager, deviceCheck: SimulatedDeviceCheckProvider(), transport: service, now: { clock.now })
        @Sendable func order() async throws -> AttestationLevel {
            try await client.performSecureRequest(URLRequest(url: FakeService.appURL), as: Accepted.self).level
        }
        #expect(try await order() == .appAttest)
        let lost = try #require(await manager.keyState?.keyID)

        // The app's data moved to another device: both requests sign with the lost key before either hears.
        simulated.invalidate(lost)
        provider.hold(2)
        async let first = order()
        async let second = order()
        #expect(try await [first, second] == [.appAttest, .appAttest])
        #expect(simulated.calls.attestKey == 2, "one replacement for both")
        let replacement = try #require(await manager.keyState)
        #expect(replacement.stage == .registered && replacement.keyID != lost && replacement.failures == 0)
    }
}
