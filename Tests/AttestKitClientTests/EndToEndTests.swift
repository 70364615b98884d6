import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import AttestKitWire
import Foundation
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client with a simulated device against a real `attestkit serve` on loopback, through a test-side backend
/// that asks the service to verify every request's proof.
@Suite("AttestKitClient end to end against attestkit serve", .serialized, .timeLimit(.minutes(3)))
struct EndToEndTests {
    static let apple: SoftwareApple = {
        do { return try SoftwareApple() } catch { fatalError("a software Apple: \(error)") }
    }()

    /// A simulated app: a device, a manager, a client and the backend it talks to.
    struct App {
        let provider: SimulatedAppAttestProvider
        let keyStore: MemoryKeyIDStore
        let manager: AppAttestManager
        let backend: AppBackend
        let client: AttestKitHTTPClient

        init(
            service: URL, device: SimulatedDevice? = nil, keyStore: MemoryKeyIDStore = MemoryKeyIDStore(),
            freshness: Freshness.Kind = .timestamp, debugToken: String? = nil
        ) {
            provider = SimulatedAppAttestProvider(
                device: device
                    ?? SimulatedDevice(
                        apple: EndToEndTests.apple,
                        configuration: .init(appID: ServiceProcess.appID, environment: .development)))
            self.keyStore = keyStore
            backend = AppBackend(service: service)
            manager = AppAttestManager(
                provider: provider, keyStore: keyStore, service: AttestKitService(baseURL: service, transport: backend),
                configuration: .init(
                    freshness: freshness, initialBackoff: 0.01, maximumBackoff: 0.05, debugToken: debugToken,
                    debugTokenOutsideSimulator: debugToken != nil))
            client = AttestKitHTTPClient(manager: manager, strategy: .appAttestOnly, transport: backend)
        }

        /// Sends an order; returns the counter the service accepted.
        func order() async throws -> Int {
            let answer = try await client.performSecureRequest(AppBackend.order(), as: AssertionResponse.self)
            #expect(answer.status == 200 && answer.level == .appAttest)
            return Int(answer.value.counter)
        }
    }

    @Test(
        "first launch attests, later requests assert with increasing counters; the next launch reuses the key",
        arguments: [Freshness.Kind.timestamp, .challenge])
    func firstLaunch(freshness: Freshness.Kind) async throws {
        try await ServiceProcess.with(apple: Self.apple) { service in
            let keyStore = MemoryKeyIDStore()
            let device: SimulatedDevice
            do {
                let app = App(service: service, keyStore: keyStore, freshness: freshness)
                var counters: [Int] = []
                for _ in 0..<4 { counters.append(try await app.order()) }
                #expect(counters == [1, 2, 3, 4])
                #expect(app.provider.calls.attestKey == 1)
                #expect(await app.manager.attestationCount == 1)
                let keyID = try #require(app.keyStore.registeredKeyID)
                #expect(app.backend.outcomes.allSatisfy { $0.keyID == keyID && $0.status == 200 })
                device = app.provider.device
            }

            // The next launch: a new manager with the same key store and device uses the stored key.
            let relaunched = App(service: service, device: device, keyStore: keyStore)
            #expect(try await relaunched.order() == 5)
            #expect(relaunched.provider.calls.attestKey == 0)
            #expect(await relaunched.manager.attestationCount == 0)
        }
    }

    @Test("a restored old counter is refused (409 counter_not_increasing) and the client re-attests")
    func restoredCounter() async throws {
        try await ServiceProcess.with(apple: Self.apple) { service in
            let app = App(service: service)
            for _ in 0..<3 { _ = try await app.order() }
            let oldKey = try #require(app.keyStore.registeredKeyID)
            try app.provider.restoreCounter(1, for: oldKey)

            #expect(try await app.order() == 1)
            // Counter 2 is not above the 3 the service saw, and no other assertion of the app is on its way: the
            // device is behind, so the client attests a new key, whose first assertion is accepted.
            let last = app.backend.outcomes.suffix(2).map { "\($0.status) \($0.code ?? "") \($0.keyID == oldKey)" }
            #expect(last == ["409 counter_not_increasing true", "200  false"])
            let newKey = try #require(app.keyStore.registeredKeyID)
            #expect(newKey != oldKey)
            #expect(await app.manager.attestationCount == 2)
            #expect(try await app.order() == 2)
        }
    }

    @Test("a key invalidated on the device is replaced by a newly attested one")
    func invalidatedKey() async throws {
        try await ServiceProcess.with(apple: Self.apple) { service in
            let app = App(service: service)
            _ = try await app.order()
            let oldKey = try #require(app.keyStore.registeredKeyID)
            app.provider.invalidate(oldKey)

            #expect(try await app.order() == 1)
            let newKey = try #require(app.keyStore.registeredKeyID)
            #expect(newKey != oldKey)
            #expect(app.provider.calls.attestKey == 2)
            // The device refused before anything was sent: the backend saw only accepted requests.
            #expect(app.backend.outcomes.allSatisfy { $0.status == 200 })
        }
    }

    @Test("a key revoked by the service (403 key_revoked) is reported, and replaced only when the app resets it")
    func revokedKey() async throws {
        try await ServiceProcess.with(apple: Self.apple) { service in
            let app = App(service: service)
            _ = try await app.order()
            let oldKey = try #require(app.keyStore.registeredKeyID)
            let path =
                "v1/keys/" + (oldKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + "/revoke"
            // The key's one spelling, percent-encoded (appendingPathComponent would encode the `%` again).
            let base = service.absoluteString.hasSuffix("/") ? service.absoluteString : service.absoluteString + "/"
            var revoke = URLRequest(url: try #require(URL(string: base + path)))
            revoke.httpMethod = "POST"
            revoke.setValue("Bearer \(ServiceProcess.adminToken)", forHTTPHeaderField: "Authorization")
            let (_, revoked) = try await URLSessionTransport().send(revoke)
            #expect(revoked.statusCode == 200)

            let error = await #expect(throws: AttestKitClientError.self) { try await app.order() }
            #expect(error?.code == .keyRevoked)
            #expect(app.backend.outcomes.last.map { "\($0.status) \($0.code ?? "")" } == "403 key_revoked")
            #expect(await app.manager.attestationCount == 1)
            try await app.manager.resetKey()
            #expect(try await app.order() == 1)
            #expect(app.keyStore.registeredKeyID != oldKey)
            #expect(await app.manager.attestationCount == 2)
        }
    }

    @Test("a key the operator deleted (DELETE /v1/keys/{keyId}, 204) is replaced by a newly attested one")
    func deletedKey() async throws {
        try await ServiceProcess.with(apple: Self.apple) { service in
            let app = App(service: service)
            _ = try await app.order()
            let oldKey = try #require(app.keyStore.registeredKeyID)
            let path = "v1/keys/" + (oldKey.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
            let base = service.absoluteString.hasSuffix("/") ? service.absoluteString : service.absoluteString + "/"
            var delete = URLRequest(url: try #require(URL(string: base + path)))
            delete.httpMethod = "DELETE"
            delete.setValue("Bearer \(ServiceProcess.adminToken)", forHTTPHeaderField: "Authorization")
            let (_, deleted) = try await URLSessionTransport().send(delete)
            #expect(deleted.statusCode == 204)

            #expect(try await app.order() == 1)
            #expect(app.keyStore.registeredKeyID != oldKey)
            #expect(await app.manager.attestationCount == 2)
            #expect(app.backend.outcomes.contains { $0.status == 403 && $0.code == "key_not_found" })
        }
    }

    @Test("a key unused for longer than keys.expire-after (403 key_expired) is replaced by a newly attested one")
    func expiredKey() async throws {
        try await ServiceProcess.with(apple: Self.apple, settings: ["keys.expire-after=3"]) { service in
            let app = App(service: service)
            _ = try await app.order()
            let oldKey = try #require(app.keyStore.registeredKeyID)
            // The service's clock is the wall clock: the key goes unused for longer than 3 seconds.
            try await Task.sleep(for: .seconds(4))

            #expect(try await app.order() == 1)
            #expect(app.keyStore.registeredKeyID != oldKey)
            #expect(await app.manager.attestationCount >= 2)
            #expect(app.backend.outcomes.contains { $0.status == 403 && $0.code == "key_expired" })
        }
    }

    @Test("10 concurrent first requests share one attestation")
    func noAttestationStorm() async throws {
        try await ServiceProcess.with(apple: Self.apple) { service in
            let app = App(service: service)
            let counters = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<10 { group.addTask { try await app.order() } }
                var counters: [Int] = []
                for try await counter in group { counters.append(counter) }
                return counters
            }
            #expect(counters.count == 10)
            #expect(app.backend.outcomes.filter { $0.status == 200 }.count == 10)
            #expect(app.provider.calls.generateKey == 1)
            #expect(app.provider.calls.attestKey == 1)
            #expect(await app.manager.attestationCount == 1)
            // Assertions made concurrently may reach the service out of order: any refused as not increasing
            // was sent again with a fresh assertion. (The counter the service reports is the key's counter after
            // the request, which a concurrent request may already have advanced, so it is not compared here.)

            // 20 more concurrent requests with the attested key: some overtake others and are refused as not
            // increasing, but the client tells that from a counter gone back and sends them again; no new key.
            let more = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<20 { group.addTask { try await app.order() } }
                var counters: [Int] = []
                for try await counter in group { counters.append(counter) }
                return counters
            }
            #expect(more.count == 20)
            let outcomes = app.backend.outcomes
            var accepted = 0
            var unexpected: [String] = []
            for outcome in outcomes {
                switch (outcome.status, outcome.code) {
                case (200, _): accepted += 1
                case (409, "counter_not_increasing"): break
                default: unexpected.append("\(outcome.status) \(outcome.code ?? "")")
                }
            }
            #expect(accepted == 30)
            #expect(unexpected.isEmpty)
            #expect(app.provider.calls.generateAssertion == outcomes.count)
            #expect(app.provider.calls.attestKey == 1)
            #expect(await app.manager.attestationCount == 1)
        }
    }

    @Test("serverUnavailable from the device: unavailable, backing off; then the same key is attested")
    func serverUnavailable() async throws {
        try await ServiceProcess.with(apple: Self.apple) { service in
            let app = App(service: service)
            app.provider.fail(.attestKey, with: .serverUnavailable)
            let error = await #expect(throws: AttestKitClientError.self) { try await app.order() }
            #expect(error?.code == .unavailable && error?.deviceError == .serverUnavailable)
            #expect(error?.retryAfter != nil)
            app.provider.stopFailing(.attestKey)
            try await Task.sleep(nanoseconds: 100_000_000)
            #expect(try await app.order() == 1)
            #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 2)
            #expect(await app.manager.attestationCount == 1)
        }
    }

    @Test("App Attest unsupported falls back to the DeviceCheck token path")
    func deviceCheckFallback() async throws {
        try await MockApple.with(apple: Self.apple) { mockURL, appleKey in
            try await ServiceProcess.with(apple: Self.apple, deviceCheckURL: mockURL, appleKey: appleKey) { service in
                let device = SimulatedDevice(
                    apple: Self.apple, configuration: .init(appID: ServiceProcess.appID, environment: .development))
                let appAttest = SimulatedAppAttestProvider(device: device, supported: false)
                let deviceCheck = SimulatedDeviceCheckProvider()
                let backend = AppBackend(service: service)
                let manager = AppAttestManager(
                    provider: appAttest, keyStore: MemoryKeyIDStore(),
                    service: AttestKitService(baseURL: service, transport: backend))
                let client = AttestKitHTTPClient(manager: manager, deviceCheck: deviceCheck, transport: backend)
                let answer = try await client.performSecureRequest(
                    AppBackend.order(), as: DeviceCheckValidateResponse.self)
                #expect(answer.level == .deviceCheck && answer.status == 200)
                #expect(answer.value.valid)
                #expect(deviceCheck.tokenCount == 1)
                #expect(appAttest.calls == .init())
            }
        }
    }
}
