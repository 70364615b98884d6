import AttestKitFlows
import AttestKitServer
import Foundation
import Testing

/// An Apple that accepts connections and never answers holds nothing past `apple.timeout`: a DeviceCheck request
/// gets 503 `apple_unavailable`, a receipt refresh round stops and backs off; other requests meanwhile are answered
/// at once, and the read deadline does not cut a request that is being answered.
@Suite("Hung Apple")
struct HungAppleTests {
    static let appleTimeout: TimeInterval = 1
    /// Bounded, not hung: wide for a loaded 2-core machine (a full run beside a build answered after 4.1 s), and
    /// below the HTTP client's own 10 s connect timeout, so that only `apple.timeout` can answer within it.
    static let slack = Duration.milliseconds(8_000)

    static func options(_ hung: HungListener) -> ServerHarness.Options {
        var options = ServerHarness.Options()
        // Live: the read deadline of the connection must not cut a request that waits on Apple.
        options.transport = .live
        options.appleBaseURL = hung.url
        options.appleTimeout = appleTimeout
        // Shorter than the Apple call: a request already read is not subject to the read deadline.
        options.connectionLimits.readTimeout = .milliseconds(500)
        return options
    }

    @Test("DeviceCheck against a hung Apple: 503 apple_unavailable within apple.timeout; others are not delayed")
    func deviceCheck() async throws {
        let hung = try await HungListener.start()
        try await ServerHarness.with(.sqlite, Self.options(hung)) { harness in
            let start = ContinuousClock.now
            async let query = harness.post(
                "/v1/devicecheck/query", ["deviceToken": .string(Fixture.deviceToken())], allow5xx: true)
            try await Task.sleep(for: .milliseconds(100))
            let health = try await harness.get("/health")
            let healthAnswered = ContinuousClock.now

            let answer = try await query
            let queryAnswered = ContinuousClock.now
            let elapsed = queryAnswered - start
            // Not delayed by the hung call: answered while it still waits on Apple (a wall-clock bound would only
            // measure the machine's load).
            #expect(health.status == 200 && healthAnswered < queryAnswered, "health answered after the hung call")
            #expect(answer.status == 503 && answer.errorCode == "apple_unavailable", "\(answer)")
            #expect(elapsed >= .milliseconds(900), "answered after \(elapsed): before the deadline?")
            #expect(elapsed <= .seconds(Self.appleTimeout) + Self.slack, "answered after \(elapsed)")
            print("hung Apple: DeviceCheck answered \(answer.status) after \(elapsed)")
        }
        await hung.stop()
    }

    @Test("receipt refresh against a hung Apple: the round stops and backs off within apple.timeout")
    func receiptRefresh() async throws {
        let hung = try await HungListener.start()
        try await ServerHarness.with(.sqlite, Self.options(hung)) { harness in
            _ = try await TestDevice.registered(harness)
            let refresh = try #require(harness.server.receiptRefresh)
            harness.clock.advance(by: 3_600)
            let start = ContinuousClock.now
            let round = await refresh.round()
            let elapsed = ContinuousClock.now - start
            #expect(round.backedOff && round.refreshed == 0, "\(round)")
            #expect(elapsed <= .seconds(Self.appleTimeout) + Self.slack, "the round took \(elapsed)")
            print("hung Apple: receipt refresh round backed off after \(elapsed)")
            let metrics = try await harness.get("/metrics").text
            // The series exists from the start at zero: counted means another value.
            #expect(metrics.contains(#"attestkit_receipt_refresh_total{result="timeout"} "#), "\(metrics)")
            #expect(!metrics.contains(#"attestkit_receipt_refresh_total{result="timeout"} 0"#), "\(metrics)")
        }
        await hung.stop()
    }
}
