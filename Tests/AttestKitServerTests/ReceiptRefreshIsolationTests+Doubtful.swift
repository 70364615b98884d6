import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import Foundation
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
