import AttestKit
import AttestKitFlows
import Foundation
import Testing

/// The attestation ramp (#33) in `/metrics` and on the operator dashboard: attest challenges admitted, installs
/// deferred by reason, present at zero from the start.
@Suite("Attestation ramp metrics")
struct AttestationRampMetricsTests {
    static func keyID(_ byte: UInt8) -> String { Data(repeating: byte, count: 32).base64EncodedString() }

    @Test("admitted attest challenges and deferred installs by reason are counted, documented and on the dashboard")
    func counted() async throws {
        var options = ServerHarness.Options()
        options.ramp = AttestationRamp(share: 50, dailyCeiling: 1)
        let ramp = options.ramp
        // Two keys inside the share, one outside.
        let keys = (0...255).map { UInt8($0) }.compactMap { byte in
            (try? KeyID(bytes: [UInt8](repeating: byte, count: 32))).map {
                (byte, ramp.admits(appID: Fixture.appID, keyID: $0))
            }
        }
        let inside = keys.filter(\.1).map(\.0)
        let outside = try #require(keys.first { !$0.1 }?.0)
        try await ServerHarness.with(.sqlite, options) { harness in
            let zero = try await harness.get("/metrics").text
            #expect(zero.contains("# HELP attestkit_attestations_deferred_total"))
            #expect(zero.contains("# HELP attestkit_attest_challenges_admitted_total"))
            for reason in ["share", "ceiling"] {
                #expect(
                    DebugTokenRouteTests.sample(
                        zero, "attestkit_attestations_deferred_total", [#"reason="\#(reason)""#]) == 0)
            }
            for (byte, status) in [(inside[0], 201), (outside, 429), (inside[1], 429)] {
                let answer = try await harness.post(
                    "/v1/challenges",
                    .object([
                        .init(key: "purpose", value: .string("attest")),
                        .init(key: "keyId", value: .string(Self.keyID(byte))),
                    ]))
                #expect(answer.status == status, "\(answer)")
            }
            let metrics = try await harness.get("/metrics").text
            #expect(metrics.contains("attestkit_attest_challenges_admitted_total 1"), "\(metrics)")
            #expect(
                DebugTokenRouteTests.sample(metrics, "attestkit_attestations_deferred_total", [#"reason="share""#]) == 1
            )
            #expect(
                DebugTokenRouteTests.sample(metrics, "attestkit_attestations_deferred_total", [#"reason="ceiling""#])
                    == 1)
            let page = try await harness.get("/dashboard", headers: ServerHarness.admin).text
            #expect(page.contains("Attestation ramp") && page.contains("deferred · share"), "\(page)")
            #expect(page.contains("deferred · ceiling") && page.contains("admitted"))
        }
    }
}
