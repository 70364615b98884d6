import AttestKit
@testable import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Synchronization
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client under the service's ramp of App Attest (429 `attestation_deferred` with `Retry-After` to the
/// attestation challenge), with the simulated device and a scripted service: the key is generated first and named
/// in the challenge request, a deferral costs no attestation, the request is served at the strategy's next level,
/// the wait is kept across launches, and the same key asks again after it.
@Suite("AttestKitClient under the service's ramp (attestation_deferred)")
struct RampTests {
    /// A simulated app over a scripted service, with a recorder of level changes.
    struct App {
        let provider: SimulatedAppAttestProvider
        let store: any KeyIDStore
        let service: FakeService
        let clock: TestClock
        let manager: AppAttestManager
        let client: AttestKitHTTPClient
        let levels = LevelLog()

        init(
            store: any KeyIDStore = MemoryKeyIDStore(), provider: SimulatedAppAttestProvider? = nil,
            service: FakeService = FakeService(), clock: TestClock = TestClock(),
            configuration: AppAttestManager.Configuration = .init(), appID: String? = nil,
            levels: [AttestationLevel] = [
                .appAttest, .deviceCheck, .riskBased,
            ]
        ) {
            self.provider =
                provider
                ?? SimulatedAppAttestProvider(
                    device: SimulatedDevice(
                        apple: EndToEndTests.apple,
                        configuration: .init(appID: ServiceProcess.appID, environment: .development)))
            self.store = store
            self.service = service
            self.clock = clock
            manager = AppAttestManager(
                provider: self.provider, keyStore: store,
                service: AttestKitService(baseURL: FakeService.serviceURL, transport: service, appID: appID),
                configuration: configuration, now: { clock.now }, random: { 0.999 })
            let log = self.levels
            client = AttestKitHTTPClient(
                manager: manager, deviceCheck: SimulatedDeviceCheckProvider(),
                strategy: AttestationStrategy(levels: levels, onLevelChange: { log.append($0) }), transport: service,
                now: { clock.now })
        }

        /// Sends an order; returns the level it was served at.
        @discardableResult
        func order() async throws -> AttestationLevel {
            try await client.performSecureRequest(URLRequest(url: FakeService.appURL), as: Accepted.self).level
        }
    }

    /// The levels `onLevelChange` reported, in order.
    final class LevelLog: @unchecked Sendable {
        private let lock = NSLock()
        private var seen: [AttestationLevel] = []

        func append(_ level: AttestationLevel) {
            lock.lock()
            defer { lock.unlock() }
            seen.append(level)
        }

        var levels: [AttestationLevel] {
            lock.lock()
            defer { lock.unlock() }
            return seen
        }
    }

    struct Accepted: Decodable, Sendable {
        let ok: Bool
    }

    @Test("the key is generated first and the attestation challenge names it")
    func challengeNamesTheKey() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let keyID = try #require(await app.manager.keyState?.keyID)
        #expect(app.service.attestChallengeKeyIDs == [keyID])
    }

    @Test("a deferral: no attestKey, the request served by DeviceCheck, the wait kept; after it the same key attests")
    func deferredThenAttested() async throws {
        let app = App()
        let deferring = Mutex(true)
        app.service.answerAttestChallenges { _ in deferring.withLock { $0 } ? .deferred("600") : nil }
        let start = app.clock.now

        #expect(try await app.order() == .deviceCheck)
        #expect(app.provider.calls.generateKey == 1)
        #expect(app.provider.calls.attestKey == 0)
        let deferred = try #require(await app.manager.keyState)
        let keyID = try #require(deferred.keyID)
        #expect(deferred.stage == .generated && deferred.deferredUntil == start.addingTimeInterval(600))
        // Not a failure: no backoff, no failure counted.
        #expect(deferred.failures == 0 && deferred.notBefore == nil && deferred.clientDataHash == nil)
        #expect(app.levels.levels == [.deviceCheck])

        // During the wait (well past any failure backoff): served by DeviceCheck without asking the service again.
        app.clock.advance(300)
        #expect(try await app.order() == .deviceCheck)
        app.clock.advance(299)
        #expect(try await app.order() == .deviceCheck)
        #expect(app.service.attestChallengeKeyIDs == [keyID])
        #expect(app.provider.calls.attestKey == 0)

        // After the wait the same key asks again; admitted now, it is attested and used.
        deferring.withLock { $0 = false }
        app.clock.advance(1)
        #expect(try await app.order() == .appAttest)
        #expect(app.service.attestChallengeKeyIDs == [keyID, keyID])
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
        let registered = try #require(await app.manager.keyState)
        #expect(registered.stage == .registered && registered.keyID == keyID && registered.deferredUntil == nil)
        #expect(await app.manager.attestationCount == 1)
        #expect(app.levels.levels == [.deviceCheck, .appAttest])
    }

    @Test("App Attest only: the caller sees attestation_deferred with the time it ends, not unavailable")
    func appAttestOnly() async throws {
        let app = App(levels: [.appAttest])
        app.service.answerAttestChallenges { _ in .deferred("120") }
        let error = await #expect(throws: AttestKitClientError.self) { try await app.order() }
        #expect(error?.code == .attestationDeferred)
        #expect(error?.code.description == "attestation_deferred")
        #expect(error?.retryAfter == app.clock.now.addingTimeInterval(120))
        #expect(error?.status == 429 && error?.serviceCode == "attestation_deferred")
        // The wait answers without the service or the device.
        let again = await #expect(throws: AttestKitClientError.self) { try await app.manager.attestedKeyID() }
        #expect(again?.code == .attestationDeferred && again?.retryAfter == error?.retryAfter)
        #expect(app.service.attestChallengeKeyIDs.count == 1 && app.provider.calls.attestKey == 0)
    }

    @Test("the wait is kept in a FileKeyIDStore: a relaunch during it asks nothing, after it uses the same key")
    func waitSurvivesRelaunch() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ramp-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let url = directory.appendingPathComponent("key-state.json")
        let service = FakeService()
        let clock = TestClock()
        let deferring = Mutex(true)
        service.answerAttestChallenges { _ in deferring.withLock { $0 } ? .deferred("3600") : nil }
        let provider: SimulatedAppAttestProvider
        let keyID: String
        do {
            let app = App(store: FileKeyIDStore(url: url), service: service, clock: clock)
            #expect(try await app.order() == .deviceCheck)
            keyID = try #require(await app.manager.keyState?.keyID)
            provider = app.provider
        }
        let stored = try #require(try FileKeyIDStore(url: url).load())
        #expect(stored.keyID == keyID && stored.deferredUntil == clock.now.addingTimeInterval(3600))

        // The next launch, a minute later: a new manager over the same file and device.
        clock.advance(60)
        do {
            let app = App(store: FileKeyIDStore(url: url), provider: provider, service: service, clock: clock)
            #expect(try await app.order() == .deviceCheck)
            #expect(service.attestChallengeKeyIDs == [keyID])
        }

        // After the wait, another launch: the same key asks again and is attested.
        deferring.withLock { $0 = false }
        clock.advance(3540)
        let app = App(store: FileKeyIDStore(url: url), provider: provider, service: service, clock: clock)
        #expect(try await app.order() == .appAttest)
        #expect(service.attestChallengeKeyIDs == [keyID, keyID])
        #expect(provider.calls.generateKey == 1 && provider.calls.attestKey == 1)
        #expect(try FileKeyIDStore(url: url).load()?.stage == .registered)
    }

    @Test(
        "Retry-After: honoured up to maximumDeferral; an hour without a readable one",
        arguments: [
            ("90", 90.0), ("0", 0), ("100000", 7200), (nil, 3600), ("Wed, 21 Oct 2026 07:28:00 GMT", 3600),
            ("-5", 3600), ("1.5", 3600), ("9999999999", 3600),
        ] as [(String?, TimeInterval)])
    func retryAfter(header: String?, wait: TimeInterval) async throws {
        let app = App(configuration: .init(maximumDeferral: 7200))
        app.service.answerAttestChallenges { _ in .deferred(header) }
        #expect(try await app.order() == .deviceCheck)
        #expect(await app.manager.keyState?.deferredUntil == app.clock.now.addingTimeInterval(wait))
        #expect(app.provider.calls.attestKey == 0)
    }

    @Test("429 other than attestation_deferred to the challenge is a failure: the backoff, not a deferral")
    func rateLimitedIsNotDeferral() async throws {
        let app = App()
        app.service.answerAttestChallenges { _ in .status(429, "rate_limited") }
        #expect(try await app.order() == .deviceCheck)
        let state = try #require(await app.manager.keyState)
        #expect(state.failures == 1 && state.notBefore != nil && state.deferredUntil == nil)
    }

    @Test("a service older than the ramp refuses a key with an attest challenge: asked without one, attested")
    func olderService() async throws {
        let app = App()
        app.service.answerAttestChallenges { keyID in keyID == nil ? nil : .status(400, "invalid_field") }
        #expect(try await app.order() == .appAttest)
        let keyID = try #require(await app.manager.keyState?.keyID)
        #expect(app.service.attestChallengeKeyIDs == [keyID, nil])
        #expect(app.provider.calls.attestKey == 1)
    }

    @Test("the App ID set on the service goes with attestation challenges only")
    func appIDOnAttestChallenges() async throws {
        let app = App(configuration: .init(freshness: .challenge), appID: "ABCDE12345.com.example.client")
        #expect(try await app.order() == .appAttest)
        #expect(app.service.challengeAppIDs == ["ABCDE12345.com.example.client", nil])
        let unnamed = App(configuration: .init(freshness: .challenge))
        #expect(try await unnamed.order() == .appAttest)
        #expect(unnamed.service.challengeAppIDs == [nil, nil])
    }

    @Test("a deferred key attestation (attestAppKey) attests nothing, keeps its key, and asks with it after the wait")
    func deferredKeyAttestation() async throws {
        let app = App()
        #expect(try await app.order() == .appAttest)
        let assertionKey = try #require(await app.manager.keyState?.keyID)
        let deferring = Mutex(true)
        app.service.answerAttestChallenges { _ in deferring.withLock { $0 } ? .deferred("60") : nil }
        let appKey = P256.Signing.PrivateKey().publicKey.derRepresentation

        let error = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestAppKey(publicKeyDER: appKey)
        }
        #expect(error?.code == .attestationDeferred && error?.retryAfter == app.clock.now.addingTimeInterval(60))
        #expect(app.provider.calls.generateKey == 2 && app.provider.calls.attestKey == 1)
        let deferredKey = try #require(app.service.attestChallengeKeyIDs.last ?? nil)
        #expect(deferredKey != assertionKey)

        // During the wait: refused without asking the service; the assertion key still serves requests.
        app.clock.advance(30)
        let again = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestAppKey(publicKeyDER: appKey)
        }
        #expect(again?.code == .attestationDeferred)
        #expect(app.service.attestChallengeKeyIDs == [assertionKey, deferredKey])
        #expect(try await app.order() == .appAttest)

        // After it: the same key asks again, is attested once and registered with the app key.
        deferring.withLock { $0 = false }
        app.clock.advance(30)
        let answer = try await app.manager.attestAppKey(publicKeyDER: appKey)
        #expect(answer.keyId == deferredKey)
        #expect(app.service.attestChallengeKeyIDs == [assertionKey, deferredKey, deferredKey])
        #expect(app.provider.calls.generateKey == 2 && app.provider.calls.attestKey == 2)
        #expect(app.service.keyAttestationRequests.map(\.keyId) == [deferredKey])
    }

    @Test("the key state keeps the deferral in its stored form, and reads states stored without it")
    func storedForm() throws {
        var state = KeyState(stage: .generated, keyID: "a2V5")
        state.deferredUntil = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(try KeyState.decoded(state.encoded()) == state)
        let older = Data(#"{"asserted":false,"failures":0,"keyID":"a2V5","stage":"generated"}"#.utf8)
        #expect(try KeyState.decoded(older).deferredUntil == nil)
    }
}
