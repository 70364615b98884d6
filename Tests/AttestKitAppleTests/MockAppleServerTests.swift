import AsyncHTTPClient
import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// The mock's own behaviour, with raw HTTP requests a client library would never send: Apple's quirks of
/// authorization, payloads and methods, and fault bookkeeping.
@Suite struct MockAppleServerTests {
    /// POSTs (or `method`s) `body` and returns the status and text.
    static func send(
        _ url: String, method: HTTPMethod = .POST, headers: [(String, String)] = [], body: String = "",
        timeout: TimeAmount = .seconds(60)
    ) async throws -> (status: Int, text: String) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if method == .POST { request.body = .bytes(ByteBuffer(string: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let buffer = try await response.body.collect(upTo: 1 << 20)
        return (Int(response.status.code), String(buffer: buffer))
    }

    /// A DeviceCheck JSON body; `nil` leaves a field out.
    static func body(
        deviceToken: String? = "QUJDREVG", transaction: String? = "\"t-1\"", timestamp: String? = "1776000000000",
        extra: String = ""
    ) -> String {
        var fields: [String] = []
        if let deviceToken { fields.append("\"device_token\":\"\(deviceToken)\"") }
        if let transaction { fields.append("\"transaction_id\":\(transaction)") }
        if let timestamp { fields.append("\"timestamp\":\(timestamp)") }
        if !extra.isEmpty { fields.append(extra) }
        return "{" + fields.joined(separator: ",") + "}"
    }

    @Test func deviceCheckWantsABearerTokenAndAWellFormedPayload() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let token = try await AppleFixture.tokens(clock).token()
            let bearer = [("Authorization", "Bearer \(token)")]
            let update = baseURL + "/v1/update_two_bits"
            let cases: [([(String, String)], String, Int, String)] = [
                ([], Self.body(), 400, "Missing or badly formatted authorization token"),
                ([("Authorization", token)], Self.body(), 400, "Missing or badly formatted authorization token"),
                (
                    [("Authorization", "Bearer not-a-jwt")], Self.body(), 400,
                    "Missing or badly formatted authorization token"
                ),
                (
                    [("Authorization", "Bearer a.b.c")], Self.body(), 400,
                    "Missing or badly formatted authorization token"
                ),
                (bearer, "not json", 400, "Missing or incorrectly formatted payload"),
                (
                    bearer, Self.body(deviceToken: nil, extra: "\"bit0\":true"), 400,
                    "Missing or incorrectly formatted device token payload"
                ),
                (
                    bearer, Self.body(transaction: nil, extra: "\"bit0\":true"), 400,
                    "Missing or incorrectly formatted transaction id"
                ),
                (
                    bearer, Self.body(timestamp: nil, extra: "\"bit0\":true"), 400,
                    "Missing or incorrectly formatted time stamp"
                ),
                (
                    bearer, Self.body(timestamp: "1776000000", extra: "\"bit0\":true"), 400,
                    "Missing or incorrectly formatted time stamp"
                ),
                (
                    bearer, Self.body(timestamp: "\"1776000000000\"", extra: "\"bit0\":true"), 400,
                    "Missing or incorrectly formatted time stamp"
                ),
                (
                    bearer, Self.body(timestamp: "1776000000000.5", extra: "\"bit0\":true"), 400,
                    "Missing or incorrectly formatted time stamp"
                ),
                (bearer, Self.body(), 400, "Missing or incorrectly formatted bits"),
                (bearer, Self.body(extra: "\"bit0\":1"), 400, "Missing or incorrectly formatted bits"),
                (bearer, Self.body(extra: "\"bit_0\":true"), 400, "Missing or incorrectly formatted bits"),
                (
                    bearer, Self.body(extra: "\"bit0\":true,\"bit1\":\"false\""), 400,
                    "Missing or incorrectly formatted bits"
                ),
                (bearer, Self.body(extra: "\"bit0\":true,\"bit1\":false"), 200, ""),
            ]
            for (headers, body, status, text) in cases {
                let answer = try await Self.send(update, headers: headers, body: body)
                #expect(answer.status == status, "\(body)")
                #expect(answer.text == text, "\(body)")
            }
            let query = try await Self.send(baseURL + "/v1/query_two_bits", headers: bearer, body: Self.body())
            #expect(query.status == 200)
            #expect(query.text == "{\"bit0\":true,\"bit1\":false,\"last_update_time\":\"2026-04\"}")
        }
    }

    @Test("the bits are a device's: every token of a simulated device reads them, another device's tokens do not")
    func bitsArePerDevice() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let bearer = [("Authorization", "Bearer \(try await AppleFixture.tokens(clock).token())")]
            let device = Array(repeating: UInt8(7), count: SimulatedDeviceToken.deviceIDLength)
            let other = Array(repeating: UInt8(8), count: SimulatedDeviceToken.deviceIDLength)
            func token(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }
            let first = SimulatedDeviceToken.make(device: device)
            let second = SimulatedDeviceToken.make(device: device)
            #expect(first != second && SimulatedDeviceToken.device(of: second) == device)

            let update = Self.body(deviceToken: token(first), extra: "\"bit0\":true")
            #expect(try await Self.send(baseURL + "/v1/update_two_bits", headers: bearer, body: update).status == 200)
            let query = baseURL + "/v1/query_two_bits"
            let again = try await Self.send(query, headers: bearer, body: Self.body(deviceToken: token(second)))
            #expect(again.text == "{\"bit0\":true,\"bit1\":false,\"last_update_time\":\"2026-04\"}")
            // Another simulated device, and a token that names no device (its own device), have no bits.
            let strangers = [SimulatedDeviceToken.make(device: other), Array(first.dropLast()) + [0]]
            #expect(SimulatedDeviceToken.device(of: strangers[1]) == device)
            for stranger in [strangers[0], Array(first.dropFirst())] {
                let answer = try await Self.send(query, headers: bearer, body: Self.body(deviceToken: token(stranger)))
                #expect(answer.status == 200 && answer.text == "Failed to find bit state")
            }
        }
    }

    @Test("the bits are a team's, as Apple keeps them: another team's token finds no bit state for the device")
    func bitsArePerTeamAndDevice() async throws {
        let clock = TestTime()
        // Any team's tokens are accepted, so that two teams call the same mock.
        let mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: AppleFixture.publicKeyPEM, keyID: AppleFixture.keyID, now: clock.closure),
            softwareApple: AppleFixture.apple)
        try await mock.withRunning { baseURL in
            let other = "FGHIJ67890"
            let teamA = [("Authorization", "Bearer \(try await AppleFixture.tokens(clock).token())")]
            let teamB = [("Authorization", "Bearer \(try await AppleFixture.tokens(clock, teamID: other).token())")]
            let device = AppleFixture.deviceToken()
            let update = baseURL + "/v1/update_two_bits"
            let query = baseURL + "/v1/query_two_bits"
            let body = Self.body(deviceToken: device)

            let set = Self.body(deviceToken: device, extra: "\"bit0\":true")
            #expect(try await Self.send(update, headers: teamA, body: set).status == 200)
            #expect(try await Self.send(query, headers: teamB, body: body) == (200, "Failed to find bit state"))
            #expect(
                try await Self.send(query, headers: teamA, body: body)
                    == (200, "{\"bit0\":true,\"bit1\":false,\"last_update_time\":\"2026-04\"}"))

            // Team B's update is its own: team A's bits stay as they were.
            let setOther = Self.body(deviceToken: device, extra: "\"bit1\":true")
            #expect(try await Self.send(update, headers: teamB, body: setOther).status == 200)
            #expect(
                try await Self.send(query, headers: teamA, body: body)
                    == (200, "{\"bit0\":true,\"bit1\":false,\"last_update_time\":\"2026-04\"}"))
            #expect(
                try await Self.send(query, headers: teamB, body: body)
                    == (200, "{\"bit0\":false,\"bit1\":true,\"last_update_time\":\"2026-04\"}"))
            #expect(await mock.state.bits(for: device, team: AppleFixture.teamID)?.bit1 == false)
            #expect(await mock.state.bits(for: device, team: other)?.bit1 == true)
            #expect(await mock.state.bits(for: device, team: "KLMNO12345") == nil)
        }
    }

    @Test func theReceiptExchangeWantsABareTokenAndABase64TextBody() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let token = try await AppleFixture.tokens(clock).token()
            let (_, receipt) = try AppleFixture.attestReceipt(clock)
            let base64 = Data(receipt).base64EncodedString()
            let url = baseURL + "/v1/attestationData"
            let cases: [([(String, String)], String, Int, String)] = [
                ([], base64, 401, "Unauthorized"),
                ([("Authorization", "Bearer \(token)")], base64, 401, "Unauthorized"),
                ([("Authorization", token), ("Content-Type", "application/octet-stream")], base64, 400, "Bad Payload"),
                ([("Authorization", token)], "", 400, "Bad Payload"),
                ([("Authorization", token)], base64 + "\n", 400, "Bad Payload"),
                ([("Authorization", token)], "QUJD", 400, "Bad Payload"),
            ]
            for (headers, body, status, text) in cases {
                let answer = try await Self.send(url, headers: headers, body: body)
                #expect(answer.status == status)
                #expect(answer.text == text)
            }
            let answer = try await Self.send(
                url, headers: [("Authorization", token), ("Content-Type", "text/plain")], body: base64)
            #expect(answer.status == 200)
            let refreshed = try #require(Data(base64Encoded: answer.text))
            #expect(try Receipt.parseUnverified(Array(refreshed)).1.type == .receipt)
        }
    }

    @Test func otherMethodsAreNotAllowed() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            for endpoint in MockAppleEndpoint.allCases {
                let answer = try await Self.send(baseURL + endpoint.path, method: .GET)
                #expect(answer.status == 405)
                #expect(answer.text == "Method Not Allowed")
            }
            #expect(try await Self.send(baseURL + "/v1/elsewhere").status == 404)
        }
    }

    @Test func faultsAreTakenInOrderAndCounted() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(
            clock, faults: [MockAppleFault(.status(429), endpoint: .queryTwoBits, count: 2)])
        try await mock.withRunning { (baseURL: String) async throws in
            await mock.state.inject(MockAppleFault(.status(503, text: "down"), count: 1))
            let url = baseURL + "/v1/query_two_bits"
            #expect(try await Self.send(url).status == 429)
            #expect(try await Self.send(baseURL + "/v1/validate_device_token") == (503, "down"))
            #expect(try await Self.send(url) == (429, "Too Many Requests"))
            #expect(try await Self.send(url).status == 400)  // no fault left: no token
            #expect(await mock.state.pendingFaults.isEmpty)
            #expect(await mock.state.requestCount(.queryTwoBits) == 3)
            #expect(await mock.state.requestCount(.validateDeviceToken) == 1)
            await mock.state.inject(MockAppleFault(.status(500), count: 3))
            await mock.state.clearFaults()
            #expect(await mock.state.pendingFaults.isEmpty)
        }
    }

    @Test("a stall on an answer without a body (an update's 200) delays it whole and adds no body")
    func aStalledEmptyAnswerStaysEmpty() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(
            clock, faults: [MockAppleFault(.stall(.milliseconds(300)), endpoint: .updateTwoBits)])
        try await mock.withRunning { (baseURL: String) async throws in
            let token = try await AppleFixture.tokens(clock).token()
            let started = ContinuousClock.now
            let answer = try await Self.send(
                baseURL + "/v1/update_two_bits", headers: [("Authorization", "Bearer \(token)")],
                body: Self.body(extra: "\"bit0\":true,\"bit1\":false"))
            #expect(answer.status == 200 && answer.text.isEmpty, "\(answer)")
            #expect(ContinuousClock.now - started >= .milliseconds(300))
        }
    }

    @Test func aStatusFaultSendsItsRetryAfterVerbatim() async throws {
        let clock = TestTime()
        let date = "Sun, 12 Apr 2026 13:20:03 GMT"
        let faults = [MockAppleFault(.status(429, retryAfter: "2")), MockAppleFault(.status(503, retryAfter: date))]
        try await AppleFixture.mock(clock, faults: faults).withRunning { (baseURL: String) async throws in
            var retryAfters: [String?] = []
            for _ in 0..<3 {
                var request = HTTPClientRequest(url: baseURL + "/v1/validate_device_token")
                request.method = .POST
                let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
                _ = try await response.body.collect(upTo: 1 << 20)
                retryAfters.append(response.headers.first(name: "Retry-After"))
            }
            #expect(retryAfters == ["2", date, nil])
        }
    }

    @Test func theMockStopsWithItsTaskAndReportsItsPort() async throws {
        let clock = TestTime()
        let mock = try AppleFixture.mock(clock)
        let baseURL = try await mock.withRunning { (baseURL: String) async throws -> String in
            #expect(baseURL == "http://127.0.0.1:\(try await mock.port())")
            #expect(try await Self.send(baseURL + "/v1/query_two_bits", method: .GET).status == 405)
            return baseURL
        }
        await #expect(throws: (any Error).self) {
            _ = try await Self.send(baseURL + "/v1/query_two_bits", timeout: .milliseconds(300))
        }
    }

    @Test("an IPv6 host is bracketed in the base URL, which then reaches the mock")
    func anIPv6HostIsBracketed() async throws {
        let clock = TestTime()
        let mock = try MockAppleServer(
            configuration: .init(verificationKeyPEM: AppleFixture.publicKeyPEM, host: "::1", now: clock.closure),
            softwareApple: AppleFixture.apple)
        try await mock.withRunning { (baseURL: String) async throws in
            #expect(baseURL == "http://[::1]:\(try await mock.port())")
            #expect(try await Self.send(baseURL + "/v1/query_two_bits", method: .GET).status == 405)
        }
    }

    /// A status no HTTP answer carries (HTTPTypes traps on one beyond 999, and a 1xx is not a final answer) is
    /// refused when the mock is made, and by `inject`, rather than met on a request.
    @Test(arguments: [-1, 0, 99, 100, 199, 600, 999, 1_000, Int.max])
    func aFaultStatusThatIsNoAnswerIsRefused(_ status: Int) async throws {
        let clock = TestTime()
        #expect(throws: MockAppleError(.invalidConfiguration, "")) {
            try AppleFixture.mock(clock, faults: [MockAppleFault(.status(429)), MockAppleFault(.status(status))])
        }
        let mock = try AppleFixture.mock(clock)
        try await mock.withRunning { (baseURL: String) async throws in
            let refused = await mock.state.inject(MockAppleFault(.status(429)), MockAppleFault(.status(status)))
            #expect(refused?.code == .invalidConfiguration)
            #expect(await mock.state.pendingFaults.isEmpty)
            // No fault pending: the mock answers as usual (no token: 400).
            #expect(try await Self.send(baseURL + "/v1/validate_device_token").status == 400)
            #expect(await mock.state.inject(MockAppleFault(.status(599)), MockAppleFault(.status(200))) == nil)
            #expect(try await Self.send(baseURL + "/v1/validate_device_token").status == 599)
            #expect(try await Self.send(baseURL + "/v1/validate_device_token").status == 200)
        }
        #expect(await MockAppleState(faults: [MockAppleFault(.status(status))]).pendingFaults.isEmpty)
    }

    @Test func aPortInUseFailsToStart() async throws {
        let clock = TestTime()
        try await AppleFixture.mock(clock).withRunning { baseURL in
            let port = try #require(Int(baseURL.split(separator: ":").last ?? ""))
            let second = try MockAppleServer(
                configuration: .init(verificationKeyPEM: AppleFixture.publicKeyPEM, port: port),
                softwareApple: AppleFixture.apple)
            await #expect(throws: (any Error).self) { try await second.withRunning { _ in } }
        }
    }

    @Test func aVerificationKeyMustBeAPublicKeyPEM() {
        #expect(throws: MockAppleError(.invalidConfiguration, "")) {
            try MockAppleServer(configuration: .init(verificationKeyPEM: "nope"), softwareApple: AppleFixture.apple)
        }
    }

    @Test(arguments: [
        ("query:429:2", MockAppleFault(.status(429), endpoint: .queryTwoBits, count: 2)),
        ("all:503", MockAppleFault(.status(503))),
        ("receipt:drop:3", MockAppleFault(.drop, endpoint: .attestationData, count: 3)),
        ("update:delay=2s", MockAppleFault(.delay(.seconds(2)), endpoint: .updateTwoBits)),
        (
            "validate:delay=250ms:4",
            MockAppleFault(.delay(.milliseconds(250)), endpoint: .validateDeviceToken, count: 4)
        ),
        ("all:delay=1.5", MockAppleFault(.delay(.milliseconds(1_500)))),
        ("receipt:stall=30s:2", MockAppleFault(.stall(.seconds(30)), endpoint: .attestationData, count: 2)),
        ("query:429:1:retry-after=2", MockAppleFault(.status(429, retryAfter: "2"), endpoint: .queryTwoBits)),
        (
            "all:503:retry-after=Sun, 12 Apr 2026 13:20:03 GMT",
            MockAppleFault(.status(503, retryAfter: "Sun, 12 Apr 2026 13:20:03 GMT"))
        ),
        (
            "receipt:429:3:retry-after=-1",
            MockAppleFault(.status(429, retryAfter: "-1"), endpoint: .attestationData, count: 3)
        ),
    ])
    func faultsParse(_ text: String, _ expected: MockAppleFault) throws {
        let fault = try MockAppleFault(parsing: text)
        #expect(fault == expected)
        #expect(try MockAppleFault(parsing: fault.description) == expected)
    }

    @Test(arguments: [
        "", "query", "query:", "nowhere:429", "query:99", "query:600", "query:429:0", "query:429:x",
        "query:delay=", "query:delay=-1s", "query:delay=2h", "query:stall=", "query:stall=1s:retry-after=2",
        "query:429:1:1", "query:explode",
        "query:429:retry-after=", "query:429:1:retry-after= 2", "query:429:1:retry-after=2 ",
        "query:drop:retry-after=2",
        "query:delay=1s:retry-after=2", "query:429:1:1:retry-after=2", "query:retry-after=2",
        "query:429:retry-after=\u{7}",
    ])
    func malformedFaultsAreRejected(_ text: String) {
        #expect(throws: MockAppleError(.invalidConfiguration, "")) { try MockAppleFault(parsing: text) }
    }
}
