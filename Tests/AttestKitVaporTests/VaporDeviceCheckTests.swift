import AttestKitAppleMock
import AttestKitFlows
import AttestKitWire
import Foundation
import NIOCore
import Prometheus
import Testing
import Vapor
import VaporTesting

/// `POST /v1/devicecheck/query|update|validate|unban` on the Vapor edge against the mock Apple: the statuses, codes
/// and bodies of `attestkit serve`'s (AttestKitServerTests' EndpointTests and AppleErrorTests make the same calls).
@Suite("Vapor DeviceCheck routes")
struct VaporDeviceCheckTests {
    /// A device token as `DCDevice.generateToken()` gives: standard Base64.
    static func deviceToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<96).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    static let backend: HTTPHeaders = ["Authorization": "Bearer \(VaporBench.backendToken)"]
    static let admin: HTTPHeaders = ["Authorization": "Bearer \(VaporBench.adminToken)"]

    /// Sends `json` to `path` with `headers` (the backend token by default); the status, the error code and the
    /// body.
    static func post(
        _ app: Application, _ path: String, _ json: String, headers: HTTPHeaders = backend
    ) async throws -> (status: HTTPStatus, code: String?, body: Data) {
        var answer: (HTTPStatus, String?, Data) = (.internalServerError, nil, Data())
        try await app.testing().test(.POST, path, headers: headers, body: ByteBuffer(string: json)) { response in
            answer = (response.status, VaporBench.code(response), Data(response.body.readableBytesView))
        }
        return answer
    }

    /// `POST /v1/devicecheck/query` for `token`, decoded.
    static func query(_ app: Application, _ token: String) async throws -> DeviceCheckQueryResponse {
        let answer = try await post(app, "/v1/devicecheck/query", #"{"deviceToken":"\#(token)"}"#)
        #expect(answer.status == .ok, "\(answer.code ?? "")")
        return try WireJSON.decode(DeviceCheckQueryResponse.self, from: answer.body)
    }

    /// Backend and admin tokens, the trial-and-ban state names.
    static func configure(_ configuration: inout AttestKitApplication.Configuration) {
        VaporRoutesTests.credentials(&configuration)
        configuration.deviceCheckStates = .trialAndBan
    }

    @Test(
        "query answers bits and state names, update sets them, banned is sticky for the backend, the operator unbans",
        arguments: await VaporStoreKind.available())
    func statesAndBan(kind: VaporStoreKind) async throws {
        let registry = PrometheusCollectorRegistry()
        try await VaporMockApple.with { mock, apple in
            try await VaporBench.withApplication(
                on: kind, configure: Self.configure, apple: apple,
                metrics: FlowMetrics(factory: PrometheusMetricsFactory(registry: registry)), prometheus: registry
            ) { app in
                let token = Self.deviceToken()
                let fresh = try await Self.query(app, token)
                #expect(!fresh.found && !fresh.bit0 && !fresh.bit1 && fresh.lastUpdateTime == nil)
                #expect(fresh.state == "trial_eligible")

                let active = try await Self.post(
                    app, "/v1/devicecheck/update", #"{"deviceToken":"\#(token)","state":"trial_active"}"#)
                #expect(active.status == .ok)
                #expect((try? WireJSON.decode(DeviceCheckUpdateResponse.self, from: active.body))?.updated == true)
                let activeQuery = try await Self.query(app, token)
                // 10: bit0 set, bit1 clear.
                #expect(activeQuery.found && activeQuery.bit0 && !activeQuery.bit1)
                #expect(activeQuery.state == "trial_active" && activeQuery.lastUpdateTime != nil)

                // Bits rather than a name: 11.
                let used = try await Self.post(
                    app, "/v1/devicecheck/update", #"{"deviceToken":"\#(token)","bit1":true}"#)
                #expect(used.status == .ok)
                let usedQuery = try await Self.query(app, token)
                #expect(usedQuery.bit0 && usedQuery.bit1 && usedQuery.state == "trial_used")

                // Refused before Apple is asked: an unknown name, a name and bits, neither.
                for body in [
                    #"{"deviceToken":"\#(token)","state":"vip"}"#,
                    #"{"deviceToken":"\#(token)","state":"banned","bit0":true}"#,
                    #"{"deviceToken":"\#(token)"}"#,
                ] {
                    let refused = try await Self.post(app, "/v1/devicecheck/update", body)
                    #expect(refused.status == .badRequest && refused.code == "invalid_field", "\(body)")
                }

                let banned = try await Self.post(
                    app, "/v1/devicecheck/update", #"{"deviceToken":"\#(token)","state":"banned"}"#)
                #expect(banned.status == .ok)
                let bannedQuery = try await Self.query(app, token)
                // 01: bit1 only.
                #expect(!bannedQuery.bit0 && bannedQuery.bit1 && bannedQuery.state == "banned")

                // Banned is sticky for the backend, by name or by bits, and Apple's bits stay as they were.
                let updatesBefore = await mock.state.requestCount(.updateTwoBits)
                for body in [
                    #"{"deviceToken":"\#(token)","state":"trial_eligible"}"#,
                    #"{"deviceToken":"\#(token)","bit1":false}"#,
                    #"{"deviceToken":"\#(token)","bit0":false,"bit1":false}"#,
                ] {
                    let refused = try await Self.post(app, "/v1/devicecheck/update", body)
                    #expect(
                        refused.status == .forbidden && refused.code == "devicecheck_unban_requires_admin", "\(body)")
                }
                #expect(await mock.state.requestCount(.updateTwoBits) == updatesBefore)
                #expect(try await Self.query(app, token).state == "banned")
                // Staying banned is not lifting it.
                let stillBanned = try await Self.post(
                    app, "/v1/devicecheck/update", #"{"deviceToken":"\#(token)","bit1":true}"#)
                #expect(stillBanned.status == .ok)

                // The unban route is the operator's: the backend token does not open it.
                let unban = #"{"deviceToken":"\#(token)","state":"trial_eligible"}"#
                let byBackend = try await Self.post(app, "/v1/devicecheck/unban", unban)
                #expect(byBackend.status == .unauthorized && byBackend.code == "admin_unauthorized")
                #expect(try await Self.query(app, token).state == "banned")
                let lifted = try await Self.post(app, "/v1/devicecheck/unban", unban, headers: Self.admin)
                #expect(lifted.status == .ok)
                let liftedQuery = try await Self.query(app, token)
                #expect(!liftedQuery.bit0 && !liftedQuery.bit1 && liftedQuery.state == "trial_eligible")

                // Every call to Apple counted, by operation and outcome.
                try await app.testing().test(.GET, "/metrics", headers: Self.backend) { response in
                    #expect(response.status == .ok)
                    let lines = response.body.string.split(separator: "\n").filter {
                        // Every outcome's series exists from the start at zero: counted means another value.
                        $0.hasPrefix("attestkit_devicecheck_requests_total{") && !$0.hasSuffix(" 0")
                    }
                    #expect(lines.contains { $0.contains(#"operation="query""#) && $0.contains(#"outcome="ok""#) })
                    #expect(lines.contains { $0.contains(#"operation="update""#) && $0.contains(#"outcome="ok""#) })
                }
            }
        }
    }

    @Test("validate: valid for a token Apple accepts, valid: false for one it rejects; query answers Apple's 400")
    func validate() async throws {
        let registry = PrometheusCollectorRegistry()
        try await VaporMockApple.with { mock, apple in
            try await VaporBench.withApplication(
                configure: Self.configure, apple: apple,
                metrics: FlowMetrics(factory: PrometheusMetricsFactory(registry: registry)), prometheus: registry
            ) { app in
                let accepted = try await Self.post(
                    app, "/v1/devicecheck/validate", #"{"deviceToken":"\#(Self.deviceToken())"}"#)
                #expect(accepted.status == .ok)
                let valid = try WireJSON.decode(DeviceCheckValidateResponse.self, from: accepted.body)
                #expect(valid.valid && valid.reason == nil)

                // Apple refusing the token (the service sends it in its standard spelling, which the mock accepts).
                await mock.state.inject(
                    MockAppleFault(.status(400, text: "Missing or incorrectly formatted device token payload"), count: 3))
                let rejected = try await Self.post(
                    app, "/v1/devicecheck/validate", #"{"deviceToken":"\#(Self.deviceToken())"}"#)
                #expect(rejected.status == .ok)
                let invalid = try WireJSON.decode(DeviceCheckValidateResponse.self, from: rejected.body)
                #expect(!invalid.valid && invalid.reason == "bad_device_token")
                #expect(await mock.state.requestCount(.validateDeviceToken) == 2)

                for path in ["/v1/devicecheck/query", "/v1/devicecheck/update"] {
                    let answer = try await Self.post(app, path, #"{"deviceToken":"\#(Self.deviceToken())","bit1":true}"#)
                    #expect(answer.status == .badRequest && answer.code == "bad_device_token", "\(path)")
                }
                // Not Base64 at all: refused before Apple is asked.
                let garbage = try await Self.post(app, "/v1/devicecheck/validate", #"{"deviceToken":"%%%"}"#)
                #expect(garbage.status == .badRequest && garbage.code == "invalid_field")
                #expect(await mock.state.requestCount(.validateDeviceToken) == 2)

                try await app.testing().test(.GET, "/metrics", headers: Self.backend) { response in
                    let lines = response.body.string.split(separator: "\n").filter {
                        // Every outcome's series exists from the start at zero: counted means another value.
                        $0.hasPrefix("attestkit_devicecheck_requests_total{") && !$0.hasSuffix(" 0")
                    }
                    #expect(lines.contains { $0.contains(#"operation="validate""#) && $0.contains(#"outcome="ok""#) })
                    #expect(
                        lines.contains {
                            $0.contains(#"operation="validate""#) && $0.contains(#"outcome="bad_device_token""#)
                        })
                }
            }
        }
    }

    @Test("without Apple's clients every DeviceCheck route answers 503 apple_not_configured")
    func appleNotConfigured() async throws {
        try await VaporBench.withApplication(configure: Self.configure) { app in
            let token = Self.deviceToken()
            let named = #"{"deviceToken":"\#(token)","state":"trial_eligible"}"#
            let plain = #"{"deviceToken":"\#(token)"}"#
            for (path, body, headers) in [
                ("/v1/devicecheck/query", plain, Self.backend), ("/v1/devicecheck/update", named, Self.backend),
                ("/v1/devicecheck/validate", plain, Self.backend), ("/v1/devicecheck/unban", named, Self.admin),
            ] {
                let answer = try await Self.post(app, path, body, headers: headers)
                #expect(answer.status == .serviceUnavailable && answer.code == "apple_not_configured", "\(path)")
            }
        }
    }
}
