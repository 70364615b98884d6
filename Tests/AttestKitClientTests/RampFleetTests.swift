import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitTestSupport
import AttestKitTesting
import AttestKitWire
import Foundation
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A fleet of simulated installs, each its own device, key store, manager and client, against a real
/// `attestkit serve` on loopback with the attestation ramp on (`ramp.share`, `ramp.daily-ceiling`), its DeviceCheck
/// answered by the software Apple's mock: the share of installs that attest, the ceiling, and what the installs
/// kept out do (no `attestKey`, served by DeviceCheck, the same key asking again after `Retry-After`).
@Suite("A fleet of installs under the service's attestation ramp, end to end", .serialized, .timeLimit(.minutes(3)))
struct RampFleetTests {
    /// One install of the app: a simulated device with App Attest and DeviceCheck, a key store, a manager, the
    /// client with the standard strategy, and its own view of the app's backend.
    struct Install: Sendable {
        let appAttest: SimulatedAppAttestProvider
        let deviceCheck: SimulatedDeviceCheckProvider
        let keyStore: MemoryKeyIDStore
        let manager: AppAttestManager
        let backend: AppBackend
        let client: AttestKitHTTPClient
        let levelChanges = RampTests.LevelLog()

        init(service: URL) {
            appAttest = SimulatedAppAttestProvider(
                device: SimulatedDevice(
                    apple: EndToEndTests.apple,
                    configuration: .init(appID: ServiceProcess.appID, environment: .development)))
            deviceCheck = SimulatedDeviceCheckProvider()
            keyStore = MemoryKeyIDStore()
            backend = AppBackend(service: service)
            manager = AppAttestManager(
                provider: appAttest, keyStore: keyStore,
                service: AttestKitService(
                    baseURL: service, transport: backend, appID: ServiceProcess.appID.description))
            let changes = levelChanges
            client = AttestKitHTTPClient(
                manager: manager, deviceCheck: deviceCheck,
                strategy: AttestationStrategy(onLevelChange: { changes.append($0) }),
                transport: backend)
        }

        /// Sends an order; returns the level it was served at (the backend verified its proof with the service).
        func order() async throws -> AttestationLevel {
            let answer = try await client.performSecureRequest(AppBackend.order(), as: Answer.self)
            #expect(answer.status == 200)
            return answer.level
        }
    }

    /// Any JSON object (an `AssertionResponse` or a `DeviceCheckValidateResponse`).
    struct Answer: Decodable, Sendable {}

    /// A fleet of `count` installs, spread evenly over `services` (the replicas of one service).
    static func fleet(_ count: Int, services: [URL]) -> [Install] {
        (0..<count).map { Install(service: services[$0 % services.count]) }
    }

    /// Sends one order from every install, at most `width` at a time; returns the levels in the fleet's order.
    static func round(_ fleet: [Install], width: Int = 12) async throws -> [AttestationLevel] {
        try await withThrowingTaskGroup(of: (Int, AttestationLevel).self) { group in
            var levels = [AttestationLevel?](repeating: nil, count: fleet.count)
            var next = 0
            for _ in 0..<min(width, fleet.count) {
                let index = next
                group.addTask { (index, try await fleet[index].order()) }
                next += 1
            }
            for try await (index, level) in group {
                levels[index] = level
                if next < fleet.count {
                    let index = next
                    group.addTask { (index, try await fleet[index].order()) }
                    next += 1
                }
            }
            return levels.compactMap { $0 }
        }
    }

    /// Where the service keeps its state: SQLite of one process, or PostgreSQL shared by two replicas.
    enum Storage: String, Sendable, CaseIterable, CustomTestStringConvertible {
        case sqlite
        case postgres

        var testDescription: String { rawValue }

        /// The storages to test: PostgreSQL where it is configured (`scripts/postgres`, `POSTGRES_*`).
        static var available: [Storage] {
            let environment = ProcessInfo.processInfo.environment
            let wanted = environment["ATTESTKIT_REQUIRE_POSTGRES"] == "1" || environment["POSTGRES_HOST"] != nil
            return wanted ? [.sqlite, .postgres] : [.sqlite]
        }

        /// The replicas started, and the storage URL they share (`nil`: SQLite of its own).
        var replicas: (count: Int, url: String?) {
            switch self {
            case .sqlite: return (1, nil)
            case .postgres: return (2, PostgresTestServer.storageURL(schemaPrefix: "ramp_fleet_"))
            }
        }
    }

    /// Runs `body` with `attestkit serve` (the ramp's `settings`, rate limits by client address off: the whole
    /// fleet comes from 127.0.0.1), as many replicas as `storage` has sharing its store, their DeviceCheck
    /// answered by the mock of Apple.
    static func withService<Result: Sendable>(
        _ settings: [String], storage: Storage = .sqlite, _ body: ([URL]) async throws -> Result
    ) async throws -> Result {
        let (count, url) = storage.replicas
        return try await MockApple.with(apple: EndToEndTests.apple) { mockURL, appleKey in
            func replicas(_ started: [URL]) async throws -> Result {
                guard started.count < count else { return try await body(started) }
                return try await ServiceProcess.with(
                    apple: EndToEndTests.apple, deviceCheckURL: mockURL, appleKey: appleKey,
                    settings: settings + ["devicecheck.validations-per-client=0"], storage: url
                ) { service in try await replicas(started + [service]) }
            }
            return try await replicas([])
        }
    }

    @Test(
        "a 10 % share: about a tenth attest; the rest make no attestKey call, are served by DeviceCheck, wait, and ask again with the same key"
    )
    func share() async throws {
        let count = 1_000
        // recheck-after of 4 s: longer than a round of the fleet on an idle machine; the test waits it out once.
        try await Self.withService(["ramp.share=10", "ramp.daily-ceiling=2000", "ramp.recheck-after=4"]) { services in
            let fleet = Self.fleet(count, services: services)
            let first = try await Self.round(fleet)
            #expect(first.count == count)
            let admitted = fleet.indices.filter { first[$0] == .appAttest }
            // Binomial(1000, 0.1): mean 100, standard deviation 9.5; 62...138 is 4 standard deviations either side
            // (a false alarm about once in 16,000 runs), and excludes a share ignored (1000), read as a fraction
            // (10), or off by half (50, 150).
            #expect((62...138).contains(admitted.count), "admitted \(admitted.count) of \(count)")
            #expect(first.allSatisfy { $0 == .appAttest || $0 == .deviceCheck })

            var deferredUntil: [Int: Date] = [:]
            var keyIDs: [Int: String] = [:]
            for (index, install) in fleet.enumerated() {
                let state = try #require(await install.manager.keyState)
                keyIDs[index] = state.keyID
                #expect(install.appAttest.calls.generateKey == 1)
                #expect(install.backend.serviceCalls("/v1/challenges") == 1)
                if first[index] == .appAttest {
                    #expect(install.appAttest.calls.attestKey == 1 && state.stage == .registered)
                    #expect(install.deviceCheck.tokenCount == 0 && install.levelChanges.levels.isEmpty)
                } else {
                    // Deferred: no attestation, the key kept, the wait saved; the request served by DeviceCheck,
                    // which the service checked with (the mock of) Apple, and the observer told.
                    #expect(install.appAttest.calls.attestKey == 0)
                    #expect(state.stage == .generated && state.failures == 0 && state.notBefore == nil)
                    deferredUntil[index] = state.deferredUntil
                    #expect(state.deferredUntil != nil)
                    #expect(install.deviceCheck.tokenCount == 1)
                    #expect(install.backend.outcomes.map(\.status) == [200])
                    #expect(install.levelChanges.levels == [.deviceCheck])
                }
            }

            // Again: every install is served as before. A deferred install whose wait had not ended when the round
            // was over did not ask the service again (on a slow machine the round may outlast some waits: those
            // installs may have asked, and were deferred again).
            let second = try await Self.round(fleet)
            let secondEnded = Date()
            #expect(second == first)
            var calls: [Int: Int] = [:]
            for (index, install) in fleet.enumerated() {
                calls[index] = install.backend.serviceCalls("/v1/challenges")
                if first[index] == .appAttest || deferredUntil[index].map({ $0 > secondEnded }) == true {
                    #expect(calls[index] == 1)
                }
            }

            // After every wait: the deferred installs ask again, with the same key (the same draw: deferred
            // again); still no attestation, served by DeviceCheck. The admitted ones keep their key.
            var latest = Date()
            for index in deferredUntil.keys {
                latest = max(latest, await fleet[index].manager.keyState?.deferredUntil ?? latest)
            }
            try await Task.sleep(for: .milliseconds(Int(max(0, latest.timeIntervalSinceNow) * 1_000) + 100))
            let third = try await Self.round(fleet)
            #expect(third == first)
            for (index, install) in fleet.enumerated() {
                let state = try #require(await install.manager.keyState)
                #expect(state.keyID == keyIDs[index] && install.appAttest.calls.generateKey == 1)
                if first[index] == .appAttest {
                    #expect(install.appAttest.calls.attestKey == 1)
                    #expect(install.backend.serviceCalls("/v1/challenges") == 1)
                } else {
                    #expect(install.appAttest.calls.attestKey == 0)
                    #expect(install.backend.serviceCalls("/v1/challenges") == (calls[index] ?? 0) + 1)
                    #expect(install.deviceCheck.tokenCount == 3)
                }
            }
            #expect(await Self.attestations(fleet) == admitted.count)
        }
    }

    @Test(
        "a 10 % share under a daily ceiling that binds: exactly the ceiling attests, across replicas; the rest wait for the next UTC day",
        arguments: Storage.available)
    func ceiling(storage: Storage) async throws {
        let count = 400
        let ceiling = 15
        // 10 % of 400 is 40 (standard deviation 6): the share admits more than 15 but for a 4-sigma draw. With
        // PostgreSQL the fleet is split over two replicas, whose ceiling is one.
        let settings = ["ramp.share=10", "ramp.daily-ceiling=\(ceiling)", "ramp.recheck-after=3600"]
        try await Self.withService(settings, storage: storage) { services in
            #expect(services.count == storage.replicas.count)
            let fleet = Self.fleet(count, services: services)
            let levels = try await Self.round(fleet)
            #expect(levels.filter { $0 == .appAttest }.count == ceiling)
            #expect(levels.filter { $0 == .deviceCheck }.count == count - ceiling)
            #expect(await Self.attestations(fleet) == ceiling)
            var afterCeiling = 0
            for (index, install) in fleet.enumerated() where levels[index] == .deviceCheck {
                #expect(install.appAttest.calls.attestKey == 0)
                #expect(install.deviceCheck.tokenCount == 1)
                let state = try #require(await install.manager.keyState)
                #expect(state.stage == .generated && state.failures == 0)
                // Kept out by the ceiling: told to come back the next UTC day, not after recheck-after.
                let wait = try #require(state.deferredUntil).timeIntervalSinceNow
                if wait > 3_700 || wait < 3_500 { afterCeiling += 1 }
            }
            // The installs in the share beyond the ceiling were told the ceiling's wait: at least one (the share
            // admitted more than the ceiling), unless the day ends within the hour.
            #expect(afterCeiling > 0 || Self.secondsToUTCMidnight() < 3_700)
        }
    }

    /// How many attestations the fleet's managers registered.
    static func attestations(_ fleet: [Install]) async -> Int {
        var total = 0
        for install in fleet { total += await install.manager.attestationCount }
        return total
    }

    /// The seconds from now to the next midnight UTC.
    static func secondsToUTCMidnight() -> TimeInterval {
        let now = Date().timeIntervalSince1970
        return 86_400 - now.truncatingRemainder(dividingBy: 86_400)
    }
}
