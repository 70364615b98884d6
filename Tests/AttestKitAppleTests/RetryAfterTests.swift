import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitTesting
import Foundation
import Testing

/// Apple's `Retry-After` over real HTTP against the mock: waited instead of the backoff (seconds or an IMF-fixdate),
/// ignored when malformed, and never slept past the call's deadline.
@Suite struct RetryAfterTests {
    /// Backoff waits of at most 10 ms, so that any wait of a second or more is Apple's; waits capped at 30 s.
    static let transport = TransportConfiguration(
        timeout: .seconds(60),
        retry: RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(10), maximumDelay: .seconds(30)))

    /// Runs `body` with a DeviceCheck client of ``transport`` (its sleeps recorded) against the mock, which answers
    /// the client's next call 429 with `Retry-After: value`.
    static func withRateLimit(
        retryAfter value: String,
        _ body: (DeviceCheckClient, SleepRecorder, MockAppleServer) async throws -> Void
    ) async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.status(429, retryAfter: value))])
        try await mock.withRunning { baseURL in
            let sleeps = SleepRecorder()
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, transport: Self.transport,
                sleeps: sleeps)
            try await body(client, sleeps, mock)
        }
    }

    @Test(arguments: [429, 503])
    func aRetryAfterInSecondsIsWaitedInsteadOfTheBackoff(_ status: Int) async throws {
        let clock = TestTime()
        let fault = MockAppleFault(.status(status, retryAfter: "1"), endpoint: .queryTwoBits)
        let mock = try AppleFixture.mock(clock, faults: [fault])
        try await mock.withRunning { baseURL in
            let sleeps = SleepRecorder()
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, transport: Self.transport,
                sleeps: sleeps)
            #expect(try await client.query(deviceToken: AppleFixture.deviceToken()) == .notFound)
            #expect(await mock.state.requestCount(.queryTwoBits) == 2)
            #expect(sleeps.recorded == [.seconds(1)], "Apple's second, not a jittered wait of at most 10 ms")
        }
    }

    @Test func aRetryAfterIsWaitedOnTheRealClock() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.status(429, retryAfter: "1"))])
        try await mock.withRunning { baseURL in
            let client = DeviceCheckClient(
                configuration: .init(baseURL: baseURL, transport: Self.transport),
                tokens: try AppleFixture.tokens(clock), clock: ContinuousClock(), now: clock.closure)
            let started = ContinuousClock.now
            try await client.validate(deviceToken: AppleFixture.deviceToken())
            let elapsed = ContinuousClock.now - started
            #expect(await mock.state.requestCount(.validateDeviceToken) == 2)
            #expect(elapsed >= .seconds(1), "it waited Apple's second")
            #expect(elapsed < .seconds(20), "and not much more")
        }
    }

    @Test func aRetryAfterBeyondTheDeadlineFailsAtOnceClassified() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(
            clock, faults: [MockAppleFault(.status(429, retryAfter: "30"), endpoint: .updateTwoBits)])
        try await mock.withRunning { baseURL in
            let transport = TransportConfiguration(
                timeout: .seconds(20),
                retry: RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(10), maximumDelay: .seconds(60)))
            // The real clock: a client that slept Apple's 30 s would end in a timeout 20 s from now.
            let client = DeviceCheckClient(
                configuration: .init(baseURL: baseURL, transport: transport),
                tokens: try AppleFixture.tokens(clock), clock: ContinuousClock(), now: clock.closure)
            let started = ContinuousClock.now
            let error = await AppleFixture.failure {
                try await client.update(deviceToken: AppleFixture.deviceToken(), bit0: true)
            }
            #expect(error?.code == .rateLimited)
            #expect(error?.status == 429)
            #expect(error?.attempts == 1)
            #expect(ContinuousClock.now - started < .seconds(10), "it gave up at once, well before the deadline")
            #expect(await mock.state.requestCount(.updateTwoBits) == 1)
        }
    }

    @Test func theReceiptExchangeGivesUpAtOnceToo() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(
            clock, faults: [MockAppleFault(.status(503, retryAfter: "30"), endpoint: .attestationData)])
        try await mock.withRunning { baseURL in
            let transport = TransportConfiguration(
                timeout: .seconds(20),
                retry: RetryPolicy(maximumAttempts: 3, baseDelay: .milliseconds(10), maximumDelay: .seconds(60)))
            let client = try ReceiptExchangeClient(
                configuration: .init(
                    url: baseURL + AppAttestEnvironment.receiptExchangePath, environment: .development,
                    transport: transport, receiptAnchor: AppleFixture.apple.trustAnchors.receipt),
                tokens: try AppleFixture.tokens(clock), clock: ContinuousClock(), now: clock.closure)
            let (keyID, attest) = try AppleFixture.attestReceipt(clock)
            let started = ContinuousClock.now
            let error = await AppleFixture.failure {
                _ = try await client.exchange(attest, appID: AppleFixture.appID, keyID: keyID)
            }
            #expect(error?.code == .serviceUnavailable)
            #expect(error?.attempts == 1)
            #expect(ContinuousClock.now - started < .seconds(10), "it gave up at once, well before the deadline")
            #expect(await mock.state.requestCount(.attestationData) == 1)
        }
    }

    /// The fixture's clock reads Sun, 12 Apr 2026 13:20:00 GMT.
    @Test(arguments: [
        ("Sun, 12 Apr 2026 13:20:03 GMT", Duration.seconds(3)), ("2", .seconds(2)), ("0000000002", .seconds(2)),
        ("000000000000000000000000003", .seconds(3)),
    ])
    func validRetryAftersAreWaited(_ value: String, _ expected: Duration) async throws {
        try await Self.withRateLimit(retryAfter: value) { client, sleeps, mock in
            try await client.validate(deviceToken: AppleFixture.deviceToken())
            #expect(sleeps.recorded == [expected])
        }
    }

    /// A wait longer than the policy's longest is Apple's to ask: the call does not retry sooner, it ends at once
    /// with the wait on its error, for the caller to keep (DeviceCheck answers it as its own `Retry-After`).
    @Test(arguments: [
        ("Sun, 12 Apr 2026 13:21:00 GMT", Duration.seconds(60)), ("120", .seconds(120)),
        ("99999999999999999999999", nil),
    ])
    func aRetryAfterBeyondTheLongestWaitIsNotCutShort(_ value: String, _ expected: Duration?) async throws {
        try await Self.withRateLimit(retryAfter: value) { client, sleeps, mock in
            let error = await AppleFixture.failure { try await client.validate(deviceToken: AppleFixture.deviceToken()) }
            #expect(error?.code == .rateLimited && error?.attempts == 1)
            let asked = try #require(error?.retryAfter)
            #expect(asked == expected ?? asked && asked > .seconds(30), "\(asked)")
            #expect(sleeps.recorded.isEmpty)
            #expect(await mock.state.requestCount(.validateDeviceToken) == 1)
        }
    }

    /// A malformed `Retry-After` is ignored, and one that asks for no wait is a floor below the backoff: either way
    /// the policy's jittered backoff is waited, never less.
    @Test(arguments: [
        "Sun, 12 Apr 2026 13:19:00 GMT", "Sun, 12 Apr 2026 13:20:00 GMT", "0", "0000000000000",  // no wait asked
        "-1", "-30", "+2", "1.5", "2s", "1 2", "soon", "0x10",
        "Sun, 12 Apr 2026 13:20:03 gmt",  // case matters
        "Mon, 12 Apr 2026 13:20:03 GMT",  // 12 April 2026 is a Sunday
        "Sun, 31 Apr 2026 13:20:03 GMT",  // no 31 April
        "Sun, 12 Apr 2026 24:00:03 GMT",
        "Sun, 12 Apr 2026 13:20:03 UTC",
        "Sun, 12 Apr 26 13:20:03 GMT",
        "Sun, 2 Apr 2026 13:20:03 GMT",
        "Sunday, 12-Apr-26 13:20:03 GMT",  // RFC 850, obsolete: not read
        "Sun Apr 12 13:20:03 2026",  // asctime, obsolete: not read
        "2026-04-12T13:20:03Z",
    ])
    func malformedRetryAftersAreIgnoredForTheBackoff(_ value: String) async throws {
        try await Self.withRateLimit(retryAfter: value) { client, sleeps, mock in
            try await client.validate(deviceToken: AppleFixture.deviceToken())
            #expect(sleeps.recorded.count == 1)
            #expect(sleeps.recorded.allSatisfy { $0 <= .milliseconds(10) }, "the policy's jittered backoff")
        }
    }
}
