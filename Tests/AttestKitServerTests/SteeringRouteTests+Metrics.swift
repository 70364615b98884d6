import AttestKit
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
}
