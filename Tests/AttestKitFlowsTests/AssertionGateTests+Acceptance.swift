import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import Testing

/// Stage separation at assertion time: a key the configuration no longer accepts is refused before anything moves.
extension AssertionGateTests {
    @Test("a key of an App ID no longer accepted: app_not_accepted, counter and challenge untouched")
    func appNoLongerAccepted() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let retired = AssertionGate(
            store: bench.store,
            acceptance: KeyAcceptance(appIDs: [try AppID("ABCDE12345.com.example.other")], environments: .both))
        let challenge = try await bench.issuer.issue(purpose: .assert, keyID: device.keyID)
        let (assertion, binding) = try device.assertion(freshness: .challenge(challenge.id.string))
        let refused = await #expect(throws: FlowError.self) {
            try await retired.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(refused?.code == .appNotAccepted && refused?.code.rawValue == "app_not_accepted")
        #expect(refused?.kind == .refused && refused?.kind.httpStatus == 403)
        #expect(try await bench.store.key(device.keyID)?.counter == 0)
        // The same assertion, challenge and all, still passes a gate that accepts the key: nothing was spent.
        let accepted = try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        #expect(accepted.counter == 1)
    }

    @Test("a key of an environment no longer accepted: environment_not_accepted, counter untouched")
    func environmentNoLongerAccepted() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let productionOnly = AssertionGate(
            store: bench.store, acceptance: KeyAcceptance(appIDs: [FlowBench.appID], environments: .production))
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let refused = await #expect(throws: FlowError.self) {
            try await productionOnly.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(refused?.code.rawValue == "environment_not_accepted" && refused?.kind == .refused)
        #expect(try await bench.store.key(device.keyID)?.counter == 0)
        // Accepted again once the configuration takes development keys back.
        let both = AssertionGate(
            store: bench.store, acceptance: KeyAcceptance(appIDs: [FlowBench.appID], environments: .both))
        #expect(try await both.verify(keyID: device.keyID, assertion: assertion, binding: binding).counter == 1)
    }
}
