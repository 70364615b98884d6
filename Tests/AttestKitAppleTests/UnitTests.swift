import AttestKit
import AttestKitApple
import AttestKitTesting
import Foundation
import Testing

/// The pieces that need no HTTP: backoff arithmetic, months, and the error type's shape.
@Suite struct UnitTests {
    @Test func backoffCapsDoubleUpToTheMaximum() {
        let policy = RetryPolicy(maximumAttempts: 6, baseDelay: .milliseconds(250), maximumDelay: .seconds(1))
        #expect(
            (1...5).map(policy.delayCap(beforeRetry:)) == [
                .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(1), .seconds(1),
            ])
        #expect(RetryPolicy.default.maximumAttempts == 3)
        #expect(RetryPolicy.none.maximumAttempts == 1)
        #expect(RetryPolicy(maximumAttempts: 0).maximumAttempts == 1)
    }

    @Test func jitterIsFullAndRepeatableWithASeed() {
        let policy = RetryPolicy(baseDelay: .seconds(1), maximumDelay: .seconds(8))
        var generator = SplitMix64(seed: 42)
        let delays = (0..<200).map { index in policy.delay(beforeRetry: 1 + index % 4, using: &generator) }
        for (index, delay) in delays.enumerated() {
            #expect(delay >= .zero && delay <= policy.delayCap(beforeRetry: 1 + index % 4))
        }
        #expect(Set(delays).count > 150, "jittered, not constant")
        #expect(delays.contains { $0 < .milliseconds(100) }, "full jitter reaches near zero")
        var again = SplitMix64(seed: 42)
        #expect((0..<200).map { index in policy.delay(beforeRetry: 1 + index % 4, using: &again) } == delays)
    }

    @Test func retryAfterIsHonouredUpToTheMaximum() {
        let policy = RetryPolicy(baseDelay: .seconds(1), maximumDelay: .seconds(5))
        var generator = SplitMix64(seed: 1)
        #expect(policy.delay(beforeRetry: 1, retryAfter: .seconds(3), using: &generator) == .seconds(3))
        #expect(policy.delay(beforeRetry: 1, retryAfter: .seconds(60), using: &generator) == .seconds(5))
        #expect(RetryPolicy(baseDelay: .zero).delay(beforeRetry: 1, using: &generator) == .zero)
    }

    @Test(arguments: [("2026-04", 2026, 4), ("1970-01", 1970, 1), ("9999-12", 9999, 12)])
    func monthsParse(_ text: String, _ year: Int, _ month: Int) throws {
        let parsed = try #require(DeviceCheckMonth(text))
        #expect(parsed.year == year && parsed.month == month)
        #expect(parsed.description == text)
    }

    @Test(arguments: [
        "", "2026-4", "2026-13", "2026-00", "1969-12", "2026/04", "２０２６-04", "2026-04-01", " 2026-04", "+026-04",
    ])
    func malformedMonthsAreRejected(_ text: String) {
        #expect(DeviceCheckMonth(text) == nil)
    }

    @Test func monthsOfDatesAreUTCAndOrdered() throws {
        #expect(DeviceCheckMonth(date: Date(timeIntervalSince1970: 1_776_000_000)).description == "2026-04")
        // 2026-04-30T23:59:59Z, then a second later.
        #expect(DeviceCheckMonth(date: Date(timeIntervalSince1970: 1_777_593_599)).description == "2026-04")
        #expect(DeviceCheckMonth(date: Date(timeIntervalSince1970: 1_777_593_600)).description == "2026-05")
        #expect(DeviceCheckMonth(date: Date(timeIntervalSince1970: -86_400 * 400)).description == "1970-01")
        #expect(try #require(DeviceCheckMonth("2025-12")) < #require(DeviceCheckMonth("2026-01")))
    }

    @Test func codesAreUniqueSnakeCaseAndRetryableOnlyForTransientFailures() {
        let codes = AppleServiceError.Code.allCases
        #expect(Set(codes.map(\.rawValue)).count == codes.count)
        for code in codes {
            #expect(code.rawValue.allSatisfy { $0.isLowercase || $0 == "_" }, "\(code)")
        }
        #expect(Set(codes.filter(\.isRetryable)) == [.rateLimited, .serverError, .serviceUnavailable, .transport])
    }

    @Test func errorsCompareByCodeAndDescribeWithoutSecrets() {
        let error = AppleServiceError(
            .rateLimited, "slow down", status: 429, appleText: "Too Many Requests", attempts: 3)
        #expect(error == AppleServiceError.code(.rateLimited))
        #expect(error != AppleServiceError.code(.serverError))
        #expect(error.description == "rate_limited (HTTP 429): slow down - Apple said \"Too Many Requests\"")
        #expect(error.shortDescription == "rate_limited")
        #expect(error.isRetryable)
        #expect(AppleServiceError(.transport, "no answer").description == "transport: no answer")
        #expect(AppleServiceError(.badPayload, "x", appleText: " \n\t ").appleText == nil)
    }

    @Test func queryResultsDescribeThemselves() throws {
        let bits = DeviceCheckQueryResult.bits(bit0: true, bit1: false, lastUpdateTime: DeviceCheckMonth("2026-04"))
        #expect(bits.description == "bit0=true bit1=false last_update_time=2026-04")
        #expect(DeviceCheckQueryResult.notFound.description.hasPrefix("not found"))
    }
}
