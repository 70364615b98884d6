import AttestKit
import AttestKitApple
import AttestKitAppleMock
import Foundation
import Testing

/// Retries (429, 5xx, dropped connections) with backoff and their limits, the per-call deadline, the response
/// size cap, and failures without an answer, over HTTP against the mock.
@Suite struct TransportTests {
    @Test func rateLimitedTwiceThenAnswered() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(
            clock, faults: [MockAppleFault(.status(429), endpoint: .queryTwoBits, count: 2)])
        try await mock.withRunning { baseURL in
            let sleeps = SleepRecorder()
            let transport = TransportConfiguration(
                timeout: .seconds(60),
                retry: RetryPolicy(maximumAttempts: 3, baseDelay: .seconds(1), maximumDelay: .seconds(30)))
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, transport: transport, sleeps: sleeps)
            #expect(try await client.query(deviceToken: AppleFixture.deviceToken()) == .notFound)
            #expect(await mock.state.requestCount(.queryTwoBits) == 3)
            // Full jitter: each wait is at most its cap (1 s, then 2 s).
            #expect(sleeps.recorded.count == 2)
            #expect(sleeps.recorded[0] <= .seconds(1) && sleeps.recorded[1] <= .seconds(2))
        }
    }

    @Test func retriesStopAtTheAttemptLimit() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.status(503), count: 10)])
        try await mock.withRunning { baseURL in
            let sleeps = SleepRecorder()
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, sleeps: sleeps)
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .serviceUnavailable)
            #expect(error?.attempts == 3)
            #expect(await mock.state.requestCount(.validateDeviceToken) == 3)
            #expect(sleeps.recorded.count == 2)
            #expect(await mock.state.pendingFaults.first?.count == 7)
        }
    }

    @Test func noRetriesWithTheNonePolicyOrForOther4xx() async throws {
        let clock = TestTime()
        let faults = [
            MockAppleFault(.status(500), endpoint: .queryTwoBits),
            MockAppleFault(.status(403), endpoint: .updateTwoBits, count: 5),
        ]
        let mock = try AppleFixture.mock(clock, faults: faults)
        try await mock.withRunning { baseURL in
            let tokens = try AppleFixture.tokens(clock)
            let once = AppleFixture.deviceCheck(
                baseURL, tokens: tokens, clock: clock, transport: TransportConfiguration(retry: .none))
            let error = await AppleFixture.failure { _ = try await once.query(deviceToken: AppleFixture.deviceToken()) }
            #expect(error?.code == .serverError && error?.attempts == 1)

            let client = AppleFixture.deviceCheck(baseURL, tokens: tokens, clock: clock)
            let forbidden = await AppleFixture.failure {
                try await client.update(deviceToken: AppleFixture.deviceToken(), bit1: true)
            }
            #expect(forbidden?.code == .forbidden && forbidden?.attempts == 1)
            #expect(await mock.state.requestCount(.updateTwoBits) == 1)
        }
    }

    @Test func aDroppedConnectionIsRetried() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.drop, endpoint: .updateTwoBits)])
        try await mock.withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let device = AppleFixture.deviceToken()
            try await client.update(deviceToken: device, bit0: true)
            #expect(await mock.state.requestCount(.updateTwoBits) == 2)
            #expect(try await client.query(deviceToken: device).bit0)
        }
    }

    @Test func connectionsDroppedEveryTimeAreATransportError() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.drop, count: 10)])
        try await mock.withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .transport)
            #expect(error?.status == nil && error?.appleText == nil)
            #expect(error?.attempts == 3)
            #expect(await mock.state.requestCount(.validateDeviceToken) == 3)
        }
    }

    @Test func aSlowAnswerPastTheDeadlineIsATimeout() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.delay(.seconds(300)), count: 5)])
        try await mock.withRunning { baseURL in
            let transport = TransportConfiguration(timeout: .milliseconds(300))
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, transport: transport)
            let started = ContinuousClock.now
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .timeout)
            #expect(error?.attempts == 1)
            // Far below the answer's 300 s: the first minute of a full test run on two cores delays tasks by a minute.
            #expect(ContinuousClock.now - started < .seconds(150), "the client gave up long before the 300 s answer")
        }
    }

    @Test func anAnswerWhoseBodyStallsPastTheDeadlineIsATimeout() async throws {
        let clock = TestTime()
        // Apple's headers come at once and its body 300 s later: AsyncHTTPClient's own deadline ends with the headers.
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.stall(.seconds(300)), count: 5)])
        try await mock.withRunning { baseURL in
            let transport = TransportConfiguration(timeout: .milliseconds(500))
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, transport: transport)
            let started = ContinuousClock.now
            let error = await AppleFixture.failure {
                _ = try await client.query(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .timeout)
            #expect(ContinuousClock.now - started < .seconds(150), "the client gave up long before the 300 s body")
        }
    }

    @Test func aSlowAnswerWithinTheDeadlineIsRead() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.delay(.milliseconds(200)))])
        try await mock.withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            #expect(try await client.query(deviceToken: AppleFixture.deviceToken()) == .notFound)
        }
    }

    @Test func theDeadlineCoversRetries() async throws {
        let clock = TestTime()
        // The first attempt (429) must end well within the deadline even on a loaded machine, so that the retry
        // is made and then cut by the deadline: 20 s against a 40 s delay (with 2 s, a full test run on two cores
        // once answered the 429 after the deadline, so no retry was made; its first minute delays tasks that much).
        // The 429 asks for a second: the call's error keeps that wait, though the retry ended without an answer.
        let faults = [MockAppleFault(.status(429, retryAfter: "1")), MockAppleFault(.delay(.seconds(40)))]
        let mock = try AppleFixture.mock(clock, faults: faults)
        try await mock.withRunning { baseURL in
            let transport = TransportConfiguration(
                timeout: .seconds(20),
                retry: RetryPolicy(baseDelay: .milliseconds(1), maximumDelay: .seconds(2)))
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, transport: transport)
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .timeout)
            #expect(error?.attempts == 2)
            #expect(error?.retryAfter == .seconds(1))
        }
    }

    @Test func anAnswerOverTheSizeCapIsRefused() async throws {
        let clock = TestTime()
        let big = MockAppleFault(.status(200, text: String(repeating: "x", count: 4_096)), endpoint: .queryTwoBits)
        let mock = try AppleFixture.mock(clock, faults: [big])
        try await mock.withRunning { baseURL in
            let transport = TransportConfiguration(maximumResponseSize: 1_024)
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock, transport: transport)
            let error = await AppleFixture.failure {
                _ = try await client.query(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .responseTooLarge)
            #expect(error?.attempts == 1)
        }
    }

    @Test func nothingListeningIsATransportErrorAfterTheRetries() async throws {
        let clock = TestTime()
        let baseURL = "http://127.0.0.1:1"  // nothing listens on port 1, and no test binds it
        let sleeps = SleepRecorder()
        let tokens = try AppleFixture.tokens(clock)
        try await AppleFixture.withFailFastClient { http in
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: tokens, clock: clock, sleeps: sleeps, httpClient: http)
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            #expect(error?.code == .transport)
            #expect(error?.attempts == 3)
            #expect(sleeps.recorded.count == 2)
        }
        // AsyncHTTPClient's default pool retries refused connections itself, until the call's deadline.
        let patient = AppleFixture.deviceCheck(
            baseURL, tokens: tokens, clock: clock, transport: TransportConfiguration(timeout: .milliseconds(300)))
        let error = await AppleFixture.failure { try await patient.validate(deviceToken: AppleFixture.deviceToken()) }
        #expect(error?.code == .timeout)
    }

    @Test func aCancelledCallIsCancelledNotAnAppleFailure() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.delay(.seconds(300)), count: 5)])
        try await mock.withRunning { baseURL in
            let client = AppleFixture.deviceCheck(
                baseURL, tokens: try AppleFixture.tokens(clock), clock: clock,
                transport: TransportConfiguration(timeout: .seconds(300)))
            let call = Task {
                await AppleFixture.failure { try await client.validate(deviceToken: AppleFixture.deviceToken()) }
            }
            // Cancelled once Apple holds the request: the service stopping mid-call.
            while await mock.state.requestCount(.validateDeviceToken) == 0 {
                try await Task.sleep(for: .milliseconds(5))
            }
            call.cancel()
            let error = await call.value
            #expect(error?.code == AppleServiceError.Code.cancelled)
            #expect(error?.isRetryable == false && error?.status == nil)
            #expect(error?.attempts == 1)
            #expect(await mock.state.requestCount(.validateDeviceToken) == 1)
        }
    }

    @Test func anUnusableURLIsAConfigurationError() async throws {
        let clock = TestTime()
        let client = AppleFixture.deviceCheck("nonsense", tokens: try AppleFixture.tokens(clock), clock: clock)
        let error = await AppleFixture.failure { try await client.validate(deviceToken: AppleFixture.deviceToken()) }
        #expect(error?.code == .invalidConfiguration)
        #expect(error?.attempts == 1)
    }
}
