import AttestKit
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTestSupport
import AttestKitTesting
import AttestKitWire
import Foundation
import Logging
import NIOHTTP1
import Testing

/// DeviceCheck when Apple refuses or fails: the mock of Apple's services refuses tokens as Apple does and injects
/// statuses and dropped connections.
@Suite("Apple errors")
struct AppleErrorTests {
    /// Apple's refusal of a device token it cannot read, for every DeviceCheck endpoint (the service sends a token in
    /// its standard spelling, which the mock accepts whatever its bytes).
    static func refusingDeviceTokens(_ state: MockAppleState) async {
        await state.inject(
            MockAppleFault(.status(400, text: "Missing or incorrectly formatted device token payload"), count: 100))
    }

    @Test(
        "a token Apple refuses: 400 bad_device_token, and validate says valid: false", arguments: await StoreKind.all())
    func badDeviceToken(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            await Self.refusingDeviceTokens(harness.mock.state)
            for path in ["/v1/devicecheck/query", "/v1/devicecheck/update"] {
                let answer = try await harness.post(
                    path, ["deviceToken": .string(Fixture.deviceToken()), "bit1": true])
                #expect(answer.status == 400 && answer.errorCode == "bad_device_token", "\(path): \(answer)")
            }
            let validate = try await harness.post(
                "/v1/devicecheck/validate", ["deviceToken": .string(Fixture.deviceToken())])
            #expect(validate.status == 200, "\(validate)")
            #expect(validate.bool("valid") == false)
            #expect(validate.string("reason") == "bad_device_token")
        }
    }

    @Test(
        "a token relayed in base64url or without padding reaches Apple in its standard spelling on every route",
        arguments: await StoreKind.all())
    func base64URLDeviceToken(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            // 95 bytes: one `=` of padding; a `+` or a `/` to respell.
            var token = ""
            while !token.contains(where: { "+/".contains($0) }) {
                token = Data((0..<95).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            }
            let relayed = String(
                token.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                    .prefix { $0 != "=" })
            #expect(relayed != token)
            let validate = try await harness.post("/v1/devicecheck/validate", ["deviceToken": .string(relayed)])
            #expect(validate.status == 200 && validate.bool("valid") == true, "\(validate)")
            let update = try await harness.post(
                "/v1/devicecheck/update", ["deviceToken": .string(relayed), "bit0": true, "bit1": true])
            #expect(update.status == 200, "\(update)")
            let query = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            #expect(query.status == 200 && query.bool("bit0") == true && query.bool("bit1") == true, "\(query)")
            let unpadded = try await harness.post(
                "/v1/devicecheck/query", ["deviceToken": .string(String(token.prefix { $0 != "=" }))])
            #expect(unpadded.status == 200 && unpadded.bool("bit1") == true, "\(unpadded)")
        }
    }

    @Test(
        "Apple failing: 503 apple_unavailable / apple_rate_limited, 502 apple_authorization_failed",
        arguments: await StoreKind.all())
    func appleFailing(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let token: JSONValue = ["deviceToken": .string(Fixture.deviceToken())]
            let state = harness.mock.state
            // Each call makes up to three attempts: three faults fail it.
            let cases: [(MockAppleFault.Action, Int, String)] = [
                (.status(503), 503, "apple_unavailable"),
                (.status(500), 503, "apple_unavailable"),
                (.drop, 503, "apple_unavailable"),
                (.status(429), 503, "apple_rate_limited"),
                (.status(401), 502, "apple_authorization_failed"),
                (.status(403), 502, "apple_authorization_failed"),
                (.status(405), 502, "apple_error"),
            ]
            for (action, status, code) in cases {
                await state.inject(MockAppleFault(action, endpoint: .queryTwoBits, count: 3))
                let answer = try await harness.post("/v1/devicecheck/query", token, allow5xx: true)
                #expect(answer.status == status && answer.errorCode == code, "\(action): \(answer)")
                if code == "apple_rate_limited" { #expect(answer.header("Retry-After") == "60") }
                await state.clearFaults()
            }
            // Apple's own wait, longer than the transport waits itself, is not cut short: one request, and the
            // answer passes it on (whole seconds, at most an hour); a 503 with one passes it on too.
            for (action, code, retryAfter) in [
                (MockAppleFault.Action.status(429, retryAfter: "120"), "apple_rate_limited", "120"),
                (.status(429, retryAfter: "86400"), "apple_rate_limited", "3600"),
                (.status(503, retryAfter: "90"), "apple_unavailable", "90"),
            ] {
                let before = await state.requestCount(.queryTwoBits)
                await state.inject(MockAppleFault(action, endpoint: .queryTwoBits, count: 3))
                let answer = try await harness.post("/v1/devicecheck/query", token, allow5xx: true)
                #expect(answer.status == 503 && answer.errorCode == code, "\(action): \(answer)")
                #expect(answer.header("Retry-After") == retryAfter, "\(action): \(answer)")
                #expect(await state.requestCount(.queryTwoBits) == before + 1, "\(action)")
                await state.clearFaults()
            }
            // One failure is retried away.
            await state.inject(MockAppleFault(.status(503), endpoint: .validateDeviceToken, count: 1))
            let retried = try await harness.post("/v1/devicecheck/validate", token)
            #expect(retried.status == 200 && retried.bool("valid") == true, "\(retried)")
            #expect(await state.requestCount(.validateDeviceToken) == 2)

            let metrics = try await harness.get("/metrics")
            let failures = metrics.text.split(separator: "\n").filter {
                $0.hasPrefix("attestkit_devicecheck_requests_total{") && $0.contains(#"operation="query""#)
                    && !$0.contains(#"outcome="ok""#) && !$0.hasSuffix(" 0")
            }
            #expect(failures.count >= 4, "\(failures)")
        }
    }

    @Test("Apple failing is logged for the operator once per request, with Apple's code and never the device token")
    func appleFailingLogged() async throws {
        let capture = LogCapture()
        var options = ServerHarness.Options()
        options.logger = capture.logger(level: .warning)
        try await ServerHarness.with(.sqlite, options) { harness in
            let deviceToken = Fixture.deviceToken()
            let state = harness.mock.state
            let cases: [(MockAppleFault.Action, Logger.Level, String, String)] = [
                (.status(401), .error, "Apple refused this server", "apple_authorization_failed"),
                (.status(405), .error, "Apple refused this server", "apple_error"),
                (.status(503), .warning, "Apple unavailable", "apple_unavailable"),
            ]
            for (action, level, message, code) in cases {
                let before = capture.logged.count
                await state.inject(MockAppleFault(action, endpoint: .queryTwoBits, count: 3))
                let answer = try await harness.post(
                    "/v1/devicecheck/query", ["deviceToken": .string(deviceToken)], allow5xx: true)
                #expect(answer.errorCode == code, "\(action): \(answer)")
                await state.clearFaults()
                let lines = capture.logged.dropFirst(before).filter { $0.message.hasPrefix(message) }
                #expect(lines.count == 1, "\(action): \(capture.logged.dropFirst(before))")
                #expect(lines.first?.level == level)
                #expect(lines.first?.metadata["code"] == code)
            }
            #expect(!capture.logged.contains { "\($0.message) \($0.metadata)".contains(deviceToken) })
        }
    }
}

extension AppleErrorTests {
    @Test("a DeviceCheck call its caller cancels while Apple holds it is not counted as Apple failing")
    func cancelledCallNotCounted() async throws {
        var options = ServerHarness.Options()
        options.appleTimeout = 60
        try await ServerHarness.with(.sqlite, options) { harness in
            let state = harness.mock.state
            await state.inject(MockAppleFault(.delay(.seconds(300)), endpoint: .queryTwoBits, count: 3))
            let application = harness.server.application
            let call = Task {
                try await application.deviceCheckQuery(DeviceTokenRequest(deviceToken: Fixture.deviceToken()))
            }
            while await state.requestCount(.queryTwoBits) == 0 { try await Task.sleep(for: .milliseconds(5)) }
            call.cancel()
            let error = await #expect(throws: FlowError.self) { try await call.value }
            #expect(error?.code.rawValue == "apple_unavailable")
            #expect(await state.requestCount(.queryTwoBits) == 1, "not retried")
            let metrics = try await harness.get("/metrics").text
            let counted = metrics.split(separator: "\n").filter {
                $0.hasPrefix("attestkit_devicecheck_requests_total{") && $0.contains(#"operation="query""#)
                    && !$0.hasSuffix(" 0")
            }
            #expect(counted.isEmpty, "\(counted)")
        }
    }
}
