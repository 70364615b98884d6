import AttestKit
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import Foundation
import Testing

@testable import AttestKitFlows

/// A replica's clock against its database's (`storage.max-clock-skew`): a replica off PostgreSQL's clock by more is
/// not ready and runs no background round, until its clock is set right; one whose store has no clock of its own
/// (SQLite) is never refused for it.
@Suite("Clock skew against the database")
struct ClockSkewTests {
    /// The value of `attestkit_clock_skew_seconds` in a `/metrics` text, if present.
    static func skewGauge(_ metrics: String) -> Double? {
        metrics.split(separator: "\n").first { $0.hasPrefix("attestkit_clock_skew_seconds ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    @Test(
        "off PostgreSQL's clock by more than the maximum: /ready 503 clock_skew, ahead or behind; set right, ready",
        arguments: await StoreKind.all())
    func readiness(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.maxClockSkew = 60
        try await ServerHarness.with(kind, options) { harness in
            // The harness's clock stood still while it started (PostgreSQL's schema, the mock): on time now.
            harness.clock.advance(by: Date().timeIntervalSince(harness.clock.now()))
            let ready = try await harness.get("/ready")
            #expect(ready.status == 200, "\(ready)")
            let metrics = try await harness.get("/metrics")
            guard kind == .postgres else {
                // SQLite's clock is this process's: nothing to compare, nothing refused, no gauge.
                harness.clock.advance(by: 86_400)
                #expect(try await harness.get("/ready").status == 200)
                #expect(Self.skewGauge(try await harness.get("/metrics").text) == nil)
                return
            }
            let measured = try #require(Self.skewGauge(metrics.text), "the gauge after a probe")
            #expect(abs(measured) < 5, "a test clock on time: \(measured)")

            harness.clock.advance(by: 120)
            let ahead = try await harness.get("/ready", allow5xx: true)
            #expect(ahead.status == 503 && ahead.errorCode == "clock_skew", "\(ahead)")
            #expect(ahead.errorMessage?.contains("ahead of the database's") == true, "\(ahead)")
            let gauge = try #require(Self.skewGauge(try await harness.get("/metrics").text))
            #expect((115...125).contains(gauge), "\(gauge)")

            harness.clock.advance(by: -240)
            let behind = try await harness.get("/ready", allow5xx: true)
            #expect(behind.status == 503 && behind.errorCode == "clock_skew", "\(behind)")
            #expect(behind.errorMessage?.contains("behind the database's") == true, "\(behind)")

            harness.clock.advance(by: 120)
            #expect(try await harness.get("/ready").status == 200, "set right, ready again")
        }
    }

    @Test("off PostgreSQL's clock by more than the maximum, the background jobs skip their rounds; set right, they run")
    func backgroundJobsPause() async throws {
        guard await StoreKind.all().contains(.postgres) else { return }
        var options = ServerHarness.Options()
        options.maxClockSkew = 60
        try await ServerHarness.with(.postgres, options) { harness in
            harness.clock.advance(by: Date().timeIntervalSince(harness.clock.now()))
            // Registered an hour ago (a receipt of that age is traded, a newer one is answered 304), due now.
            harness.clock.advance(by: -3_600)
            let device = try await TestDevice.registered(harness)
            harness.clock.advance(by: 3_600)
            try await harness.store.postponeReceiptRefresh(of: device.keyID, until: harness.clock.now())
            let refresh = try #require(harness.server.receiptRefresh)

            // A challenge that expired an hour ago: the cleanup deletes it once it runs.
            var generator = SystemRandomNumberGenerator()
            let created = harness.clock.now().addingTimeInterval(-7_200)
            try await harness.store.insertChallenge(
                StoredChallenge(
                    id: .random(using: &generator), bytes: Array(repeating: 1, count: 32), purpose: .attest,
                    keyID: nil, createdAt: created, expiresAt: created.addingTimeInterval(3_600)))

            harness.clock.advance(by: 120)
            let skipped = await refresh.round()
            #expect(skipped == ReceiptRefreshService.Round(), "\(skipped)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 0, "Apple not called")
            #expect(await harness.server.challengeCleanup.round() == 0, "nothing deleted")

            harness.clock.advance(by: -120)
            let round = await refresh.round()
            #expect(round.refreshed == 1, "\(round)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 1)
            #expect(await harness.server.challengeCleanup.round() >= 1, "the expired challenge deleted")
        }
    }

    @Test(
        "the skew is the smallest the round trip allows: 0 inside it, the distance to the nearer end outside",
        arguments: [
            (database: 100.0, before: 100.0, after: 100.5, skew: 0.0),
            (database: 100.2, before: 100.0, after: 100.5, skew: 0.0),
            (database: 40.0, before: 100.0, after: 100.5, skew: 60.0),
            (database: 160.5, before: 100.0, after: 100.5, skew: -60.0),
            (database: 160.5, before: 100.5, after: 100.0, skew: -60.0),
        ])
    func skewArithmetic(database: Double, before: Double, after: Double, skew: Double) {
        let measured = ClockSkewCheck.skew(
            database: Date(timeIntervalSince1970: database), before: Date(timeIntervalSince1970: before),
            after: Date(timeIntervalSince1970: after))
        #expect(measured == skew)
    }

    @Test("over the maximum means strictly over it; NaN is over; no maximum refuses nothing")
    func exceeds() {
        let check = ClockSkewCheck(
            maximum: 60, store: MemoryAttestationStore(), metrics: FlowMetrics(), logger: ServerHarness.silent,
            now: { Date() })
        #expect(!check.exceeds(60) && !check.exceeds(-60) && !check.exceeds(nil))
        #expect(check.exceeds(60.001) && check.exceeds(-61) && check.exceeds(.nan))
        let unchecked = ClockSkewCheck(
            maximum: nil, store: MemoryAttestationStore(), metrics: FlowMetrics(), logger: ServerHarness.silent,
            now: { Date() })
        #expect(!unchecked.exceeds(86_400))
        // A maximum or a skew that is not a number refuses, and its message does not trap.
        let strange = ClockSkewCheck(
            maximum: .nan, store: MemoryAttestationStore(), metrics: FlowMetrics(), logger: ServerHarness.silent,
            now: { Date() })
        #expect(strange.exceeds(1) && strange.exceeds(.nan))
        #expect(strange.refusal(.nan).code == .clockSkew && strange.refusal(-.infinity).code == .clockSkew)
    }
}
