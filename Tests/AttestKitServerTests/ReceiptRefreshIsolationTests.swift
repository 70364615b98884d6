import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import Foundation
import Testing

/// One receipt Apple refuses postpones only its key; only Apple-wide failures back the whole service off.
@Suite("Receipt refresh: one bad receipt never stalls the others")
struct ReceiptRefreshIsolationTests {
    /// Three registered keys whose receipts are due, in registration order (the order a round claims them; it
    /// trades them concurrently, so a fault injected for the next request hits any one of them).
    static func dueKeys(_ harness: ServerHarness) async throws -> [TestDevice] {
        var devices: [TestDevice] = []
        for _ in 0..<3 {
            devices.append(try await TestDevice.registered(harness))
            harness.clock.advance(by: 1)
        }
        harness.clock.advance(by: 3_600)
        return devices
    }

    @Test(
        "a receipt Apple refuses postpones its key only; the others are refreshed in the same round",
        arguments: [400, 404], await StoreKind.all())
    func refusedReceipt(status: Int, kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let devices = try await Self.dueKeys(harness)
            let refresh = try #require(harness.server.receiptRefresh)
            await harness.mock.state.inject(MockAppleFault(.status(status), endpoint: .attestationData))
            let round = await refresh.round()
            #expect(round.refreshed == 2 && round.postponed == 1 && !round.backedOff, "\(round)")

            // The round trades its keys at once: the fault hits whichever exchange reaches the mock first.
            var unrated: [TestDevice] = []
            for device in devices where try await harness.store.key(device.keyID)?.riskMetric == nil {
                unrated.append(device)
            }
            #expect(unrated.count == 1, "one refused key; the others are refreshed")
            let refusedDevice = try #require(unrated.first)
            let refused = try #require(try await harness.store.key(refusedDevice.keyID))
            let refreshAt = try #require(refused.receiptRefreshAt, "a refused key is retried, never dropped")
            let wait = refreshAt.timeIntervalSince(harness.clock.now())
            #expect(wait >= (status == 404 ? 2 * 86_400 : 3_600) - 1, "\(wait)")
            for device in devices where device.keyID != refusedDevice.keyID {
                #expect(try await harness.store.key(device.keyID)?.riskMetric == 7)
            }

            // Refused again later: it waits longer, up to a week, and is never dropped. (The other keys are revoked,
            // so that each later round takes this key only.)
            for device in devices where device.keyID != refusedDevice.keyID {
                _ = try await harness.store.revokeKey(device.keyID, now: harness.clock.now())
            }
            var previous = wait
            for _ in 0..<6 {
                harness.clock.advance(by: previous + 1)
                await harness.mock.state.inject(MockAppleFault(.status(status), endpoint: .attestationData))
                let again = await refresh.round()
                #expect(again.postponed == 1 && !again.backedOff, "\(again)")
                let next = try #require(try await harness.store.key(refusedDevice.keyID)?.receiptRefreshAt)
                let waited = next.timeIntervalSince(harness.clock.now())
                #expect(waited >= previous || waited >= 7 * 86_400 - 1, "\(waited) after \(previous)")
                #expect(waited <= 7 * 86_400 + 1)
                previous = waited
            }
        }
    }

    @Test(
        "Apple-wide failures, and this server's key refused (401, 403), stop the round and back off, postponing no key",
        arguments: [401, 403, 429, 500, 503])
    func appleWideFailure(status: Int) async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let devices = try await Self.dueKeys(harness)
            let refresh = try #require(harness.server.receiptRefresh)
            await harness.mock.state.inject(MockAppleFault(.status(status), endpoint: .attestationData, count: 20))
            let round = await refresh.round()
            #expect(round.backedOff && round.refreshed == 0 && round.postponed == 0, "\(round)")
            for device in devices {
                let record = try #require(try await harness.store.key(device.keyID))
                #expect(record.riskMetric == nil)
                #expect((record.receiptRefreshAt ?? .distantFuture) <= harness.clock.now(), "still due")
            }
        }
    }

    @Test("a round cancelled while Apple holds its calls (a stopping service) counts no Apple failure; keys stay due")
    func cancelledRound() async throws {
        var options = ServerHarness.Options()
        options.appleTimeout = 60
        try await ServerHarness.with(.sqlite, options) { harness in
            let devices = try await Self.dueKeys(harness)
            let refresh = try #require(harness.server.receiptRefresh)
            await harness.mock.state.inject(MockAppleFault(.delay(.seconds(300)), endpoint: .attestationData, count: 3))
            let round = Task { await refresh.round() }
            while await harness.mock.state.requestCount(.attestationData) == 0 {
                try await Task.sleep(for: .milliseconds(5))
            }
            round.cancel()
            let outcome = await round.value
            #expect(outcome.refreshed == 0 && outcome.postponed == 0, "\(outcome)")
            let metrics = try await harness.get("/metrics").text
            #expect(metrics.contains(#"attestkit_receipt_refresh_total{result="transport"} 0"#), "\(metrics)")
            #expect(!metrics.contains(#"attestkit_receipt_refresh_total{result="cancelled"}"#), "\(metrics)")
            for device in devices {
                let record = try #require(try await harness.store.key(device.keyID))
                #expect((record.receiptRefreshAt ?? .distantFuture) <= harness.clock.now(), "still due")
            }
        }
    }

    @Test("a 401 is about one receipt only when the receipt is of another team's app than the provider token's")
    func unauthorizedByTeam() throws {
        let ours = try AppID(teamID: "ABCDE12345", bundleID: "com.example.app")
        let theirs = try AppID(teamID: "ZYXWV98765", bundleID: "com.example.app")
        func aboutTheReceipt(_ code: AppleServiceError.Code, _ appID: AppID) -> Bool {
            ReceiptRefreshService.concernsOnlyThisReceipt(code, appID: appID, tokenTeamID: "ABCDE12345")
        }
        #expect(!aboutTheReceipt(.invalidAuthorizationToken, ours) && aboutTheReceipt(.invalidAuthorizationToken, theirs))
        #expect(!aboutTheReceipt(.forbidden, theirs) && !aboutTheReceipt(.authorizationTokenExpired, theirs))
        for code in [AppleServiceError.Code.badPayload, .incorrectEnvironment, .noData, .receiptInvalid] {
            #expect(aboutTheReceipt(code, ours))
        }
    }

    @Test("the postponement grows with the receipt's age, within its bounds")
    func postponementBounds() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        func wait(_ code: AppleServiceError.Code, age: TimeInterval?) -> TimeInterval {
            ReceiptRefreshService.postponement(
                after: code, receiptCreatedAt: age.map { now.addingTimeInterval(-$0) }, now: now)
        }
        #expect(wait(.forbidden, age: 60) == 3_600)
        #expect(wait(.forbidden, age: 10_000) == 10_000)
        #expect(wait(.forbidden, age: 30 * 86_400) == 7 * 86_400)
        #expect(wait(.noData, age: 60) == 2 * 86_400)
        #expect(wait(.noData, age: nil) == 2 * 86_400)
    }
}
