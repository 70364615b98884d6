import AttestKit
import AttestKitAppleMock
import AttestKitFlows
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

extension SteeringRouteTests {
    @Test(
        "POST /v1/tokens counts its DeviceCheck validations and the per-client budget's 429, as the guarded routes do",
        arguments: await StoreKind.all())
    func deviceTokenMetrics(kind: StoreKind) async throws {
        var options = try TokenRouteTests.options()
        options.tokensAcceptDeviceTokens = true
        try await ServerHarness.with(kind, options) { harness in
            let budget = DeviceTokenValidator.defaultValidationsPerClient
            for index in 0...budget {
                let token = Data("DeviceCheck token \(index)".utf8).base64EncodedString()
                let answer = try await harness.send(
                    .POST, "/v1/tokens", headers: [(AttestKitHeaderNames.deviceToken, token)])
                #expect(answer.status == (index < budget ? 201 : 429), "\(index) \(answer)")
            }
            let metrics = try await harness.get("/metrics").text
            #expect(
                metrics.contains(#"attestkit_device_token_validations_total{result="valid",source="apple"} \#(budget)"#),
                "\(metrics)")
            #expect(metrics.contains(#"attestkit_rate_limited_total{limit="devicecheck_validations_per_client"} 1"#))
        }
    }

    @Test(
        "the fallback's calls to Apple count in attestkit_devicecheck_requests_total, its failures by code",
        arguments: await StoreKind.all())
    func fallbackDeviceCheckCalls(kind: StoreKind) async throws {
        var options = try TokenRouteTests.options()
        options.tokensAcceptDeviceTokens = true
        try await ServerHarness.with(kind, options) { harness in
            let valid = try await harness.send(
                .POST, "/v1/tokens", headers: [(AttestKitHeaderNames.deviceToken, Fixture.deviceToken())])
            #expect(valid.status == 201, "\(valid)")
            // Apple rate limiting this server, on every attempt of the call: fails closed, and is counted.
            await harness.mock.state.inject(MockAppleFault(.status(429), endpoint: .validateDeviceToken, count: 3))
            let limited = try await harness.send(
                .POST, "/v1/tokens", headers: [(AttestKitHeaderNames.deviceToken, Fixture.deviceToken())],
                allow5xx: true)
            #expect(limited.status == 503 && limited.errorCode == "apple_rate_limited", "\(limited)")
            let metrics = try await harness.get("/metrics").text
            #expect(
                metrics.contains(#"attestkit_devicecheck_requests_total{operation="validate",outcome="ok"} 1"#),
                "\(metrics)")
            #expect(
                metrics.contains(
                    #"attestkit_devicecheck_requests_total{operation="validate",outcome="rate_limited"} 1"#),
                "\(metrics)")
        }
    }
}
