import AttestKit
import AttestKitApple
import AttestKitAppleMock
import Foundation
import Testing

/// Every status of Apple's tables (docs/apple-formats.md §5, §6), and the texts actually seen, injected by the mock and
/// read back by the clients over HTTP as a typed error with the status and Apple's text. Retryable ones are retried to
/// the limit; the others are sent once.
@Suite struct AppleStatusTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var status: Int
        var text: String
        var code: AppleServiceError.Code

        init(_ status: Int, _ text: String, _ code: AppleServiceError.Code) {
            self.status = status
            self.text = text
            self.code = code
        }

        var testDescription: String { "\(status) \(text) -> \(code)" }
    }

    static let deviceCheckCases: [Case] = [
        Case(400, "Missing or incorrectly formatted device token payload", .badDeviceToken),
        Case(400, "Bad Device Token", .badDeviceToken),
        Case(400, "Missing or incorrectly formatted bits", .badBits),
        Case(400, "Bad Bits", .badBits),
        Case(400, "Missing or incorrectly formatted time stamp", .badTimestamp),
        Case(400, "Bad Timestamp", .badTimestamp),
        Case(400, "Missing or badly formatted authorization token", .badAuthorizationToken),
        Case(400, "Bad Authorization Token", .badAuthorizationToken),
        Case(400, "BAD_AUTHENTICATION_TOKEN", .badAuthorizationToken),
        Case(400, "Bad Payload", .badPayload),
        Case(400, "Missing or incorrectly formatted payload", .badPayload),
        Case(400, "Something new", .badPayload),
        Case(401, "Unable to verify authorization token", .invalidAuthorizationToken),
        Case(401, "Invalid Authorization Token", .invalidAuthorizationToken),
        Case(401, "Authorization Token Expired", .authorizationTokenExpired),
        Case(403, "Forbidden", .forbidden),
        Case(404, "Not Found", .unexpectedResponse),
        Case(405, "Method Not Allowed", .methodNotAllowed),
        Case(418, "I'm a teapot", .unexpectedResponse),
        Case(429, "Too Many Requests", .rateLimited),
        Case(500, "Server Error", .serverError),
        Case(502, "Bad Gateway", .serverError),
        Case(503, "Service Unavailable", .serviceUnavailable),
    ]

    static let receiptCases: [Case] = [
        Case(400, "Incorrect Environment", .incorrectEnvironment),
        Case(400, "Bad Payload", .badPayload),
        Case(401, "Unauthorized", .invalidAuthorizationToken),
        Case(403, "Forbidden", .forbidden),
        Case(404, "No Data Found", .noData),
        Case(405, "Method Not Allowed", .methodNotAllowed),
        Case(418, "I'm a teapot", .unexpectedResponse),
        Case(429, "Too Many Requests", .rateLimited),
        Case(500, "Server Error", .serverError),
        Case(503, "Service Unavailable", .serviceUnavailable),
    ]

    static func check(_ error: AppleServiceError?, _ expected: Case, requests: Int) {
        #expect(error?.code == expected.code)
        #expect(error?.status == expected.status)
        #expect(error?.appleText == expected.text)
        let attempts = expected.code.isRetryable ? 3 : 1
        #expect(error?.attempts == attempts)
        #expect(requests == attempts)
        #expect(error?.isRetryable == [429, 500, 502, 503].contains(expected.status))
    }

    @Test(arguments: deviceCheckCases)
    func deviceCheckStatuses(_ expected: Case) async throws {
        let clock = TestTime()
        let fault = MockAppleFault(.status(expected.status, text: expected.text), count: 10)
        let mock = try AppleFixture.mock(clock, faults: [fault])
        try await mock.withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let error = await AppleFixture.failure {
                try await client.update(deviceToken: AppleFixture.deviceToken(), bit0: true)
            }
            Self.check(error, expected, requests: await mock.state.requestCount(.updateTwoBits))
        }
    }

    @Test(arguments: receiptCases)
    func receiptExchangeStatuses(_ expected: Case) async throws {
        let clock = TestTime()
        let fault = MockAppleFault(.status(expected.status, text: expected.text), endpoint: .attestationData, count: 10)
        let mock = try AppleFixture.mock(clock, faults: [fault])
        try await mock.withRunning { baseURL in
            let client = try AppleFixture.exchange(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let (keyID, receipt) = try AppleFixture.attestReceipt(clock)
            let error = await AppleFixture.failure {
                _ = try await client.exchange(receipt, appID: AppleFixture.appID, keyID: keyID)
            }
            Self.check(error, expected, requests: await mock.state.requestCount(.attestationData))
        }
    }

    @Test func applesTextIsCutToTwoHundredPrintableCharacters() async throws {
        let clock = TestTime()
        let long = "Bad\u{0}Payload\n\t" + String(repeating: "é", count: 50) + String(repeating: "x", count: 500)
        let mock = try AppleFixture.mock(clock, faults: [MockAppleFault(.status(400, text: long))])
        try await mock.withRunning { baseURL in
            let client = AppleFixture.deviceCheck(baseURL, tokens: try AppleFixture.tokens(clock), clock: clock)
            let error = await AppleFixture.failure {
                try await client.validate(deviceToken: AppleFixture.deviceToken())
            }
            let text = try #require(error?.appleText)
            #expect(text.count == 200)
            #expect(text.hasPrefix("Bad?Payload ??"))
            #expect(text.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) })
        }
    }
}
