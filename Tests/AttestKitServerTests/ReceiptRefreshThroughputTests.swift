import AttestKit
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import Foundation
import Logging
import Synchronization
import Testing

@testable import AttestKitFlows

/// The refresh keeps up: exchanges run concurrently up to `receipt-refresh.concurrency`, the fleet never exceeds
/// `receipt-refresh.max-per-second`, and the backlog is measured.
@Suite("Receipt refresh: concurrency, the fleet's ceiling, the backlog")
struct ReceiptRefreshThroughputTests {
    /// `count` registered keys whose receipts are due.
    static func dueKeys(_ harness: ServerHarness, count: Int) async throws -> [TestDevice] {
        var devices: [TestDevice] = []
        for _ in 0..<count { devices.append(try await TestDevice.registered(harness)) }
        harness.clock.advance(by: 3_600)
        return devices
    }

    /// A refresh service of its own on `store` (the harness's by default) with the harness's Apple, silent.
    static func replica(
        _ harness: ServerHarness, store: (any AttestationStore)? = nil, batch: Int, concurrency: Int,
        ceiling: Int = 0, acceptance: KeyAcceptance? = nil, now: @escaping @Sendable () -> Date
    ) throws -> ReceiptRefreshService {
        ReceiptRefreshService(
            store: store ?? harness.store, exchange: try #require(harness.server.application.apple?.receiptExchange),
            interval: .seconds(60), batch: batch, concurrency: concurrency, maxPerSecond: ceiling,
            riskThreshold: nil, acceptance: acceptance, metrics: FlowMetrics(),
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, now: now)
    }

    /// The harness's time, running at the real rate from now (a shared budget refills with the service's clock).
    static func runningClock(_ harness: ServerHarness) -> @Sendable () -> Date {
        let (start, origin) = (harness.clock.now(), Date())
        return { start.addingTimeInterval(Date().timeIntervalSince(origin)) }
    }

    @Test(
        "a round has at most receipt-refresh.concurrency exchanges in flight, and trades every key",
        arguments: await StoreKind.all())
    func boundedConcurrency(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.receiptRefreshConcurrency = 3
        try await ServerHarness.with(kind, options) { harness in
            let devices = try await Self.dueKeys(harness, count: 10)
            let refresh = try #require(harness.server.receiptRefresh)
            // Apple answers in 200 ms: a sequential round has one exchange in flight, a concurrent one several.
            await harness.mock.state.inject(
                MockAppleFault(.delay(.milliseconds(200)), endpoint: .attestationData, count: 10))
            let round = await refresh.round()
            #expect(round.refreshed == 10 && round.postponed == 0 && !round.backedOff && round.handedBack == 0)
            #expect(await harness.mock.state.maximumInFlight(.attestationData) == 3)
            for device in devices { #expect(try await harness.store.key(device.keyID)?.riskMetric == 7) }
        }
    }

    @Test(
        "a whole batch taken, parked or claimed, is followed by the next round at once, not after the interval",
        arguments: await StoreKind.all())
    func backlogWithoutWaiting(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.receiptRefreshBatch = 5
        options.receiptRefreshActiveWithin = 3_600
        try await ServerHarness.with(kind, options) { harness in
            // Twelve idle keys are due first; twelve used ones after them. The interval is an hour.
            var idle: [TestDevice] = []
            for _ in 0..<12 { idle.append(try await TestDevice.registered(harness)) }
            harness.clock.advance(by: 7_200)
            var used: [TestDevice] = []
            for _ in 0..<12 { used.append(try await TestDevice.registered(harness)) }
            harness.clock.advance(by: 2 * 86_400)
            for device in used {
                let accepted = try await device.verify(try device.verifyBody(freshness: device.now))
                #expect(accepted.status == 200, "\(accepted)")
            }
            let refresh = try #require(harness.server.receiptRefresh)
            let running = Task { try await refresh.run() }
            defer { running.cancel() }
            // Rounds of 5: three batches of idle keys parked (the third with three used keys traded), then the rest;
            // one round an interval would have parked five idle keys and waited an hour.
            var traded = 0
            for _ in 0..<3_000 {
                traded = 0
                for device in used where try await harness.store.key(device.keyID)?.riskMetric == 7 { traded += 1 }
                if traded == used.count { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(traded == used.count)
            for device in idle { #expect(try await harness.store.key(device.keyID)?.riskMetric == nil) }
            #expect(await harness.mock.state.requestCount(.attestationData) == used.count)
        }
    }

    @Test(
        "an Apple-wide failure under concurrency: no key postponed, every untraded key handed back, still due",
        arguments: await StoreKind.all())
    func failureUnderConcurrency(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.receiptRefreshConcurrency = 4
        try await ServerHarness.with(kind, options) { harness in
            let devices = try await Self.dueKeys(harness, count: 12)
            let refresh = try #require(harness.server.receiptRefresh)
            await harness.mock.state.inject(MockAppleFault(.status(503), endpoint: .attestationData, count: 100))
            let round = await refresh.round()
            #expect(round.backedOff && round.refreshed == 0 && round.postponed == 0, "\(round)")
            #expect(round.handedBack == 12, "\(round)")
            // The round stopped starting exchanges once one failed: far fewer calls than keys (each call is
            // retried by the client's policy, so count arrivals per key at most).
            #expect(await harness.mock.state.maximumInFlight(.attestationData) <= 4)
            for device in devices {
                let record = try #require(try await harness.store.key(device.keyID))
                #expect((record.receiptRefreshAt ?? .distantFuture) <= harness.clock.now(), "still due")
            }
        }
    }

    @Test(
        "two replicas sharing receipt-refresh.max-per-second never call Apple more often than it allows",
        arguments: await StoreKind.all())
    func sharedCeiling(kind: StoreKind) async throws {
        let ceiling = 4
        try await ServerHarness.with(kind) { harness in
            let devices = try await Self.dueKeys(harness, count: 12)
            // The budget refills with the service's clock: here the harness's time, running at the real rate.
            let clock = Self.runningClock(harness)
            func replica() throws -> ReceiptRefreshService {
                try Self.replica(harness, batch: 6, concurrency: 4, ceiling: ceiling, now: clock)
            }
            await harness.mock.state.inject(
                MockAppleFault(.delay(.milliseconds(50)), endpoint: .attestationData, count: 100))
            let (one, two) = (try replica(), try replica())
            async let first = one.round()
            async let second = two.round()
            let rounds = await [first, second]
            #expect(rounds.map(\.refreshed).reduce(0, +) == 12, "\(rounds)")
            for device in devices { #expect(try await harness.store.key(device.keyID)?.riskMetric == 7) }

            // Calls are at least a quarter second apart when taken; counted on arrival at Apple, a window a little
            // under a second (by one spacing, for the time between taking and arriving, which a loaded 2-core machine
            // stretches: half a spacing once let 5 in) holds at most 4. Two replicas each keeping the ceiling alone
            // would send 8 a second: 6 in such a window.
            let arrivals = await harness.mock.state.arrivals(.attestationData)
            #expect(arrivals.count == 12)
            let window = Duration.seconds(1) - .seconds(1) / ceiling
            for (index, arrival) in arrivals.enumerated() {
                let inWindow = arrivals[index...].prefix { $0 < arrival + window }.count
                #expect(inWindow <= ceiling, "\(inWindow) calls within \(window) of call \(index)")
            }
            // And the fleet did not go much slower than the ceiling: 12 calls at 4 a second take about 3 seconds.
            if let last = arrivals.last, let first = arrivals.first {
                #expect(last - first >= .milliseconds(2_500), "\(last - first)")
            }
        }
    }

    @Test(
        "under a ceiling a call to Apple is one request, retried by no one but the round; without one, the client retries",
        arguments: await StoreKind.all())
    func noRetriesUnderACeiling(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            _ = try await Self.dueKeys(harness, count: 3)
            let clock = Self.runningClock(harness)
            func replica(ceiling: Int) throws -> ReceiptRefreshService {
                try Self.replica(harness, batch: 3, concurrency: 1, ceiling: ceiling, now: clock)
            }
            // One 503: under a ceiling of 50 it is the call's only request (the budget counted one), and the round
            // backs off with every key handed back.
            await harness.mock.state.inject(MockAppleFault(.status(503), endpoint: .attestationData, count: 1))
            let limited = try await replica(ceiling: 50).round()
            #expect(limited.backedOff && limited.refreshed == 0 && limited.handedBack == 3, "\(limited)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 1)
            // Without a ceiling the exchange client's retries apply: the 503 is retried and every key is traded.
            await harness.mock.state.inject(MockAppleFault(.status(503), endpoint: .attestationData, count: 1))
            let unlimited = try await replica(ceiling: 0).round()
            #expect(!unlimited.backedOff && unlimited.refreshed == 3, "\(unlimited)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 1 + 4)
        }
    }

    @Test("a store that fails a hand-back is not asked again for the others: they wait for their lease")
    func handBackStopsAtTheStoresFailure() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            _ = try await Self.dueKeys(harness, count: 3)
            // Each failing write would cost its own deadline (10 s on PostgreSQL), one key after the other.
            let store = CountingStore(
                harness.store,
                beforePostpone: { () async throws(StoreError) in
                    throw StoreError(.storageUnavailable, "the database is gone")
                })
            let refresh = try Self.replica(
                harness, store: store, batch: 3, concurrency: 1, ceiling: 50, now: Self.runningClock(harness))
            await harness.mock.state.inject(MockAppleFault(.status(503), endpoint: .attestationData, count: 1))
            let outcome = await refresh.round()
            #expect(outcome.backedOff && outcome.handedBack == 0, "\(outcome)")
            #expect(store.calls("postponeReceiptRefresh") == 1)
        }
    }

    @Test("a receipt Apple answered is stored even when the round is cancelled (shutdown) before the write")
    func storedAfterCancellation() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let device = try await Self.dueKeys(harness, count: 1)[0]
            let writing = Atomic(false)
            let released = Atomic(false)
            // The write waits until the round's task has been cancelled; SQLite refuses work for a cancelled task.
            let store = CountingStore(harness.store) {
                writing.store(true, ordering: .sequentiallyConsistent)
                while !released.load(ordering: .sequentiallyConsistent) {
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            let refresh = try Self.replica(
                harness, store: store, batch: 1, concurrency: 1, now: { harness.clock.now() })
            let round = Task { await refresh.round() }
            for _ in 0..<30_000 where !writing.load(ordering: .sequentiallyConsistent) {
                try await Task.sleep(for: .milliseconds(10))
            }
            round.cancel()
            released.store(true, ordering: .sequentiallyConsistent)
            let outcome = await round.value
            #expect(outcome.refreshed == 1 && !outcome.backedOff, "\(outcome)")
            #expect(try await harness.store.key(device.keyID)?.riskMetric == 7)
        }
    }

    @Test("after a round, the backlog gauges: keys still due and how long the oldest has waited")
    func backlogMetrics() async throws {
        var options = ServerHarness.Options()
        options.receiptRefreshBatch = 1
        try await ServerHarness.with(.sqlite, options) { harness in
            let devices = try await Self.dueKeys(harness, count: 3)
            let now = harness.clock.now()
            try await harness.store.postponeReceiptRefresh(of: devices[0].keyID, until: now.addingTimeInterval(-1_000))
            try await harness.store.postponeReceiptRefresh(of: devices[1].keyID, until: now.addingTimeInterval(-10))
            try await harness.store.postponeReceiptRefresh(of: devices[2].keyID, until: now.addingTimeInterval(600))
            let refresh = try #require(harness.server.receiptRefresh)
            // The round (batch 1) trades the oldest; the second is left due, 10 seconds late; the third is not due.
            #expect(await refresh.round().refreshed == 1)
            let metrics = try await harness.get("/metrics")
            func gauge(_ name: String) -> Double? {
                metrics.text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
                    .flatMap { Double($0.dropFirst(name.count + 1)) }
            }
            #expect(gauge("attestkit_receipt_refresh_backlog") == 1, "\(metrics.text)")
            #expect(gauge("attestkit_receipt_refresh_oldest_due_seconds") == 10)
        }
    }
}

extension ReceiptRefreshThroughputTests {
    @Test(
        "a key deleted or revoked after its batch was claimed is not traded: its receipt never reaches Apple",
        arguments: await StoreKind.all())
    func claimedThenErased(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.receiptRefreshConcurrency = 1
        try await ServerHarness.with(kind, options) { harness in
            let devices = try await Self.dueKeys(harness, count: 4)
            let refresh = try #require(harness.server.receiptRefresh)
            // The first exchange takes a while (long enough for the erasures below on a loaded machine); the other
            // three keys wait for it, claimed.
            await harness.mock.state.inject(
                MockAppleFault(.delay(.seconds(5)), endpoint: .attestationData, count: 1))
            let round = Task { await refresh.round() }
            let started = ContinuousClock.now
            while await harness.mock.state.requestCount(.attestationData) == 0 {
                try #require(ContinuousClock.now - started < .seconds(60), "the round never reached Apple")
                try await Task.sleep(for: .milliseconds(5))
            }
            // Meanwhile every key is erased or revoked (the one in flight among them).
            for device in devices.prefix(2) { try await harness.store.deleteKey(device.keyID) }
            for device in devices.suffix(2) {
                _ = try await harness.store.revokeKey(device.keyID, now: harness.clock.now())
            }
            let outcome = await round.value
            #expect(await harness.mock.state.requestCount(.attestationData) == 1, "\(outcome)")
            #expect(outcome.refreshed == 0, "\(outcome)")
        }
    }

    @Test(
        "a key whose App ID or environment is no longer accepted is not traded: it waits a day",
        arguments: await StoreKind.all())
    func notAcceptedIsNotTraded(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let devices = try await Self.dueKeys(harness, count: 2)
            let application = harness.server.application
            // The service's own refresh judges keys as its gate does.
            #expect(application.receiptRefresh?.acceptance == application.gate.acceptance)
            let stored = try #require(try await harness.store.key(devices[0].keyID))
            #expect(application.gate.acceptance?.accepts(stored) == true)
            // The configuration changed since: another app only.
            let elsewhere = try AppID(validating: "ZZZZZ99999.com.example.elsewhere")
            let acceptance = KeyAcceptance(appIDs: [elsewhere], environments: .both)
            let refresh = try Self.replica(
                harness, batch: 10, concurrency: 2, acceptance: acceptance, now: { harness.clock.now() })
            let round = await refresh.round()
            #expect(round.refreshed == 0 && round.postponed == 2 && !round.backedOff, "\(round)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 0)
            for device in devices {
                #expect(try await harness.store.key(device.keyID)?.receiptRefreshAt == harness.clock.now() + 86_400)
            }
        }
    }
}
