import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import Testing

/// Assertion answers say which freshness was enforced and whether the key's risk is known; client data that claims
/// AttestKit's format must be exactly that.
@Suite("Freshness and risk in answers")
struct FreshnessAndRiskTests {
    @Test("answers name the freshness enforced: challenge, timestamp or vouched")
    func freshnessIsNamed() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let device = try await TestDevice.registered(harness)
            let challenge = try await device.verify(
                try device.verifyBody(freshness: try await device.assertChallenge()))
            #expect(challenge.status == 200 && challenge.string("freshness") == "challenge", "\(challenge)")
            let timestamp = try await device.verify(
                try device.verifyBody(freshness: device.now, form: .clientData))
            #expect(timestamp.status == 200 && timestamp.string("freshness") == "timestamp", "\(timestamp)")
            // The caller's own client data: only the counter is enforced, and the answer says so.
            let own = Array("my-scheme|POST|/v1/orders|nonce=42".utf8)
            let assertion = try device.assertion(over: own)
            let vouched = try await device.verify(
                ["keyId": .string(device.keyID.base64), "assertion": .base64(assertion), "clientData": .base64(own)])
            #expect(vouched.status == 200 && vouched.string("freshness") == "vouched", "\(vouched)")
        }
    }

    @Test("client data that starts like AttestKit's but is not canonical is refused, not vouched for")
    func nearCanonicalClientDataIsRefused() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let device = try await TestDevice.registered(harness)
            let canonical = try device.binding(freshness: .timestamp(milliseconds: 0)).clientData
            let text = String(decoding: canonical, as: UTF8.self)
            let variants: [String] = [
                text + "\n",  // a trailing line feed
                text.replacingOccurrences(of: "\n", with: "\r\n"),  // other line ends
                text.replacingOccurrences(of: "POST", with: "post"),  // not upper case
                text.replacingOccurrences(of: "timestamp:0", with: "timestamp:00"),  // a second spelling
                text.replacingOccurrences(of: "timestamp:0", with: "fresh:0"),  // an unknown freshness
                text.replacingOccurrences(of: "attestkit-assertion-v1", with: "attestkit-assertion-v2"),
                "attestkit-",
            ]
            for variant in variants {
                let clientData = Array(variant.utf8)
                let assertion = try device.assertion(over: clientData)
                let answer = try await device.verify(
                    [
                        "keyId": .string(device.keyID.base64), "assertion": .base64(assertion),
                        "clientData": .base64(clientData),
                    ])
                #expect(answer.status == 400 && answer.errorCode == "client_data_malformed", "\(variant): \(answer)")
            }
            #expect(try await harness.store.key(device.keyID)?.counter == 0)
        }
    }

    @Test("a key's risk is unknown until Apple rated it, and a policy can ask for step-up meanwhile")
    func unknownRisk() async throws {
        for stepUpWhileUnknown in [false, true] {
            var options = ServerHarness.Options()
            options.policy = .init(riskMetricThreshold: 10, stepUpWhileRiskUnknown: stepUpWhileUnknown)
            options.mockRiskMetric = 3
            try await ServerHarness.with(.sqlite, options) { harness in
                let device = TestDevice(harness)
                let registered = try await device.register()
                #expect(registered.status == 201)
                #expect(registered.string("riskStatus") == "unknown" && !registered.has("riskMetric"))
                #expect(registered.bool("stepUp") == stepUpWhileUnknown, "\(registered)")
                let before = try await device.verify(try device.verifyBody(freshness: device.now))
                #expect(before.string("riskStatus") == "unknown", "\(before)")
                #expect(before.bool("stepUp") == stepUpWhileUnknown)

                // Apple rates the key (risk 3, under the threshold): known, and no step-up either way.
                harness.clock.advance(by: 3_600)
                let round = try await #require(harness.server.receiptRefresh).round()
                #expect(round.refreshed == 1, "\(round)")
                let after = try await device.verify(try device.verifyBody(freshness: device.now))
                #expect(after.string("riskStatus") == "assessed" && after.int("riskMetric") == 3, "\(after)")
                #expect(after.bool("stepUp") == false)
                let record = try await harness.get("/v1/keys/\(device.keyID.pathComponent)", headers: ServerHarness.admin)
                #expect(record.string("riskStatus") == "assessed", "\(record)")
            }
        }
    }

    @Test(
        "policy.validation-category-change step-up: 200 with stepUp and validationCategoryChanged, counted",
        arguments: await StoreKind.all())
    func categoryChangeStepsUp(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.policy = .init(validationCategoryChange: .stepUp)
        try await ServerHarness.with(kind, options) { harness in
            let appStore = SimulatedDevice.Configuration(
                appID: Fixture.appID, environment: .development, iOS27: true, bundleVersion: "7", validationCategory: 4)
            let device = try await TestDevice.registered(harness, configuration: appStore)
            let same = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(same.status == 200 && same.bool("stepUp") == false, "\(same)")
            #expect(!same.has("validationCategoryChanged") && same.int("validationCategory") == 4)

            var testFlight = appStore
            testFlight.validationCategory = 2
            let updated = device.updated(to: testFlight)
            let changed = try await updated.verify(try updated.verifyBody(freshness: updated.now))
            #expect(changed.status == 200 && changed.bool("stepUp") == true, "\(changed)")
            #expect(changed.bool("validationCategoryChanged") == true && changed.int("validationCategory") == 2)
            #expect(try await harness.store.key(device.keyID)?.counter == 2)

            let metrics = try await harness.get("/metrics").text
            let counted = #"attestkit_validation_category_step_ups_total{route="assertion"} 1"#
            #expect(metrics.contains(counted), "\(metrics)")
        }
    }
}
