import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import Foundation
import Logging
import Testing

extension ReceiptRefreshIsolationTests {
    /// A proxy, a load balancer or an outage page in the way answers every receipt alike, with what Apple never
    /// answers (a redirect, 407, 421, a page that is not a receipt): that is a failure of the way to Apple, not of
    /// each receipt, and must not postpone every due key for a day or more, one Apple call each.
    @Test(
        "answers no receipt would get, in a row (a redirect, 407, 421, an HTML page), back off and postpone no key",
        arguments: [
            MockAppleFault.Action.status(302), .status(407), .status(421),
            .status(200, text: "<html><body>Service maintenance</body></html>"),
        ])
    func doubtfulAnswersInARow(fault: MockAppleFault.Action) async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let devices = try await Self.dueKeys(harness)
            let refresh = try #require(harness.server.receiptRefresh)
            await harness.mock.state.inject(MockAppleFault(fault, endpoint: .attestationData, count: 20))
            let round = await refresh.round()
            #expect(round.backedOff && round.refreshed == 0 && round.postponed == 0, "\(round)")
            #expect(round.handedBack == devices.count, "\(round)")
            for device in devices {
                let record = try #require(try await harness.store.key(device.keyID))
                #expect((record.receiptRefreshAt ?? .distantFuture) <= harness.clock.now(), "still due")
            }
        }
    }

    @Test("one doubtful answer among good ones postpones its key only, as a refused receipt does")
    func oneDoubtfulAnswer() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            _ = try await Self.dueKeys(harness)
            let refresh = try #require(harness.server.receiptRefresh)
            await harness.mock.state.inject(
                MockAppleFault(.status(200, text: "not a receipt"), endpoint: .attestationData))
            let round = await refresh.round()
            #expect(round.refreshed == 2 && round.postponed == 1 && !round.backedOff, "\(round)")
            #expect(round.handedBack == 0, "\(round)")
        }
    }
}

extension ReceiptRefreshIsolationTests {
    @Test("Apple's Retry-After on a failure that stops the round is kept for the next round's wait")
    func applesWaitIsKept() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            _ = try await Self.dueKeys(harness)
            let refresh = try #require(harness.server.receiptRefresh)
            await harness.mock.state.inject(
                MockAppleFault(.status(429, retryAfter: "600"), endpoint: .attestationData, count: 20))
            let round = await refresh.round()
            #expect(round.backedOff && round.refreshed == 0 && round.postponed == 0, "\(round)")
            #expect(round.retryAfter == .seconds(600), "\(round)")
        }
    }
}

extension ReceiptRefreshIsolationTests {
    @Test("a key with no receipt exchange for its environment waits a day, instead of being claimed every lease")
    func unexchangeableKeyWaits() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let devices = try await Self.dueKeys(harness)
            let exchanges = try #require(harness.server.application.apple?.receiptExchange)
            // A service built for production alone; the harness's keys are development keys.
            let production = ReceiptRefreshService(
                store: harness.store, exchange: exchanges.filter { $0.key == .production }, interval: .seconds(60),
                batch: 10, concurrency: 2, maxPerSecond: 0, riskThreshold: nil, metrics: FlowMetrics(),
                logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }, now: harness.clock.now)
            let round = await production.round()
            #expect(round.postponed == devices.count && round.refreshed == 0 && !round.backedOff, "\(round)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 0)
            for device in devices {
                let refreshAt = try #require(try await harness.store.key(device.keyID)?.receiptRefreshAt)
                #expect(refreshAt.timeIntervalSince(harness.clock.now()) >= 86_400 - 1)
            }
        }
    }
}
