import AttestKit
import AttestKitFlows
import AttestKitTesting
import AttestKitWire
import Foundation
import Testing

/// A route guard that tries a request's target in another form (Vapor's `;` for `%3B`) records only the refusal of
/// the request, never the refusal of a form tried before another was accepted.
extension RecordingTests {
    @Test("a target tried before the accepted one writes no bundle; a request refused in every form writes one")
    func alternativeTargetsRecordOnlyTheRequestsRefusal() async throws {
        let recorder = try Self.recorder()
        let bench = try FlowBench(recorder: recorder)
        let routeGuard = RouteGuard(gate: bench.gate)
        let device = try await bench.registeredDevice()
        func check(_ target: String, _ alternatives: [String]) async throws(FlowError) -> RequestAttestation {
            let headers = try? EnforcementTests.headers(device)
            return try await routeGuard.check(
                lookup: { name in headers?[name].map { .value($0) } ?? .absent }, method: "POST", target: target,
                alternativeTargets: alternatives, body: Array("{}".utf8))
        }
        // Signed over `/orders`: the first form is refused, the second accepted.
        let accepted = try await check("/orders;x", ["/orders"])
        #expect(accepted.trust == .appAttest)
        #expect(await recorder.bundleNames().isEmpty, "an accepted request writes nothing")
        // Refused in both forms: one bundle, the last form's.
        await #expect(throws: FlowError.self) { try await check("/orders;x", ["/orders;y"]) }
        let bundles = try await Self.bundles(recorder)
        #expect(bundles.count == 1 && bundles.first?.outcome.code == "signature_invalid")
        // A first form refused for another reason ends the request there, and is recorded.
        let unknown = try await FlowBench().registeredDevice()
        let headers = try EnforcementTests.headers(unknown)
        await #expect(throws: FlowError.self) {
            try await routeGuard.check(
                lookup: { name in headers[name].map { .value($0) } ?? .absent }, method: "POST", target: "/orders;x",
                alternativeTargets: ["/orders"], body: Array("{}".utf8))
        }
        let all = try await Self.bundles(recorder)
        #expect(all.count == 2 && all.last?.outcome.code == "key_not_found", "\(all.map(\.outcome.code))")
    }
}
