import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import ServiceLifecycle
import Testing

@testable import AttestKitServer

/// Draining before shutdown, in process: `/ready` answers 503 `draining` while every other route is still served,
/// the drain service holds the listener open for the drain period (less when cut short), `/ready` pings the store
/// instead of counting its keys, and the `shutdown.*` settings. The real process on a signal is
/// ``DrainingReplicaTests``.
@Suite("Draining")
struct DrainingTests {
    static let silent = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    @Test(
        "a draining server answers /ready with 503 draining and still serves every other route",
        arguments: await StoreKind.all())
    func readyAnswersDraining(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            #expect(try await harness.get("/ready").status == 200)
            #expect(harness.server.application.startDraining())
            #expect(harness.server.application.isDraining)
            let ready = try await harness.get("/ready", allow5xx: true)
            #expect(ready.status == 503 && ready.errorCode == "draining", "\(ready)")
            #expect(try await harness.get("/health").status == 200)
            let challenge = try await harness.post("/v1/challenges", ["purpose": .string("attest")])
            #expect(challenge.status == 201, "\(challenge)")
            let device = try await TestDevice.registered(harness)
            let verified = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(verified.status == 200, "\(verified)")
            // Draining is for good: a second start changes nothing.
            #expect(!harness.server.application.startDraining())
            #expect(try await harness.get("/ready", allow5xx: true).errorCode == "draining")
        }
    }

    @Test("/ready pings the store on every probe and never counts its keys")
    func readyPingsWithoutCounting() async throws {
        let store = CountingStore(MemoryAttestationStore())
        let server = try AttestKitServer(
            configuration: ServerConfiguration(
                appIDs: [Fixture.appID], environments: .development, storageURL: "memory:",
                trustAnchors: Fixture.apple.trustAnchors, logLevel: .critical),
            store: store, logger: Self.silent)
        try await Application(router: server.buildRouter()).test(.router) { client in
            for _ in 0..<3 {
                try await client.execute(uri: "/ready", method: .get) { #expect($0.status == .ok) }
            }
        }
        #expect(store.calls("ping") == 3)
        #expect(store.calls("keyCounts") == 0)
        await store.close()
        try await Application(router: server.buildRouter()).test(.router) { client in
            try await client.execute(uri: "/ready", method: .get) {
                #expect($0.status == .serviceUnavailable && RouterTests.code($0) == "storage_unavailable")
            }
        }
        #expect(store.calls("keyCounts") == 0)
    }

    /// A drain of `period` after `Idle` in one group, as `attestkit serve` runs the server and its drain.
    static func group(period: Duration) throws -> (ServiceGroup, DrainService, AttestKitApplication) {
        let application = try AttestKitApplication(
            configuration: .init(
                appIDs: [Fixture.appID], environments: .development, trustAnchors: Fixture.apple.trustAnchors),
            store: MemoryAttestationStore(), logger: silent)
        let drain = DrainService(application: application, drainPeriod: period, logger: silent)
        let group = ServiceGroup(configuration: .init(services: [Idle(), drain], logger: silent))
        return (group, drain, application)
    }

    @Test("graceful shutdown starts the drain, which holds the rest for its period, or less when cut short")
    func drainServiceHoldsThenEnds() async throws {
        let (group, drain, application) = try Self.group(period: .seconds(600))
        #expect(!drain.endDrain())  // nothing to end before the shutdown
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await Task.sleep(for: .milliseconds(50))
            #expect(!application.isDraining)
            await group.triggerGracefulShutdown()
            let start = ContinuousClock.now
            while !application.isDraining, start.duration(to: .now) < .seconds(30) {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(application.isDraining)
            // Still draining a moment later: the group waits for the drain before it stops the other services.
            try await Task.sleep(for: .milliseconds(200))
            var ended = false
            while !ended, start.duration(to: .now) < .seconds(30) {
                ended = drain.endDrain()
                if !ended { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(ended)
            // Cut short, the group ends long before the 600 s drain period.
            try await tasks.next()
            #expect(start.duration(to: .now) < .seconds(120))
        }
        #expect(!drain.endDrain())
    }

    @Test("a second signal that comes before the drain begins ends the drain as it starts, never skipping it")
    func endBeforeTheDrainStarts() async throws {
        let (group, drain, application) = try Self.group(period: .seconds(600))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let start = ContinuousClock.now
            await group.triggerGracefulShutdown()
            // At once, as a second SIGTERM right after the first: the drain may not have begun.
            #expect(drain.endDrain(shutdownRequested: true))
            try await tasks.next()
            #expect(start.duration(to: .now) < .seconds(120), "not the 600 s drain period")
        }
        #expect(application.isDraining, "the drain ran (and ended at once): /ready said draining")
        #expect(!drain.endDrain(shutdownRequested: true))
    }

    @Test("a drain period of 0 starts draining and ends at once")
    func zeroDrainPeriod() async throws {
        let (group, _, application) = try Self.group(period: .zero)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await group.triggerGracefulShutdown()
            try await tasks.next()
        }
        #expect(application.isDraining)
    }

    @Test("shutdown.* settings: 5 s and 30 s by default, read from the environment, refused out of range")
    func settings() async throws {
        let defaults = try await ServerConfigurationSource.load(flags: [:], environment: [:], file: nil)
        #expect(defaults.shutdown == ServerConfiguration.Shutdown(drainPeriod: .seconds(5), gracePeriod: .seconds(30)))
        let read = try await ServerConfigurationSource.load(
            flags: [:],
            environment: ["ATTESTKIT_SHUTDOWN_DRAIN_PERIOD": "0.5", "ATTESTKIT_SHUTDOWN_GRACE_PERIOD": "2"], file: nil)
        #expect(read.shutdown.drainPeriod == .milliseconds(500) && read.shutdown.gracePeriod == .seconds(2))
        let zero = try await ServerConfigurationSource.load(
            flags: [:], environment: ["ATTESTKIT_SHUTDOWN_DRAIN_PERIOD": "0"], file: nil)
        #expect(zero.shutdown.drainPeriod == .zero)
        for (environment, key) in [
            (["ATTESTKIT_SHUTDOWN_DRAIN_PERIOD": "-1"], "shutdown.drain-period"),
            (["ATTESTKIT_SHUTDOWN_DRAIN_PERIOD": "3601"], "shutdown.drain-period"),
            (["ATTESTKIT_SHUTDOWN_DRAIN_PERIOD": "soon"], "shutdown.drain-period"),
            (["ATTESTKIT_SHUTDOWN_GRACE_PERIOD": "0"], "shutdown.grace-period"),
            (["ATTESTKIT_SHUTDOWN_DRAIN_PERIOD": "40"], "shutdown.grace-period"),
            // Equal: the requests accepted as the drain ends would have no time left to be answered.
            (["ATTESTKIT_SHUTDOWN_DRAIN_PERIOD": "30"], "shutdown.grace-period"),
            (["ATTESTKIT_SHUTDOWN_DRAIN_PERIOD": "29.5"], "shutdown.grace-period"),
        ] {
            let error = await #expect(throws: ServerConfigurationError.self) {
                try await ServerConfigurationSource.load(flags: [:], environment: environment, file: nil)
            }
            #expect(error?.key == key, "\(environment)")
        }
    }
}

/// A service that runs until graceful shutdown.
private struct Idle: Service {
    func run() async throws { try? await gracefulShutdown() }
}
