import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import Testing

/// The gate on an in-memory store with the software Apple: no HTTP, no framework.
struct AssertionGateTests {
    @Test("an assertion is accepted once; its replay is a conflict")
    func acceptOnce() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let accepted = try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        #expect(accepted.counter == 1)
        #expect(accepted.key.counter == 1)
        let replay = await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(replay?.code.rawValue == "counter_not_increasing")
        #expect(replay?.kind == .conflict)
    }

    @Test("a timestamp outside the window is refused before the key is read", arguments: [-301.0, 301.0])
    func timestampWindow(offset: TimeInterval) async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let (assertion, binding) = try device.assertion(
            freshness: .timestamp(milliseconds: FlowBench.milliseconds(offset)))
        await #expect(throws: FlowError.timestampOutsideWindow) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
    }

    @Test("a challenge is consumed once")
    func challengeOnce() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let challenge = try await bench.issuer.issue(purpose: .assert, keyID: device.keyID)
        let first = try device.assertion(freshness: .challenge(challenge.id.string))
        _ = try await bench.gate.verify(keyID: device.keyID, assertion: first.assertion, binding: first.binding)
        let second = try device.assertion(freshness: .challenge(challenge.id.string))
        let error = await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: second.assertion, binding: second.binding)
        }
        #expect(error?.code.rawValue == "challenge_consumed")
        #expect(error?.kind == .conflict)
    }

    @Test("unknown and revoked keys are refused")
    func keyState() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let elsewhere = try FlowBench()
        let unknown = await #expect(throws: FlowError.self) {
            try await elsewhere.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(unknown?.code == .keyNotFound)
        #expect(unknown?.kind == .refused)
        _ = try await bench.store.revokeKey(device.keyID, now: Date())
        let revoked = await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        }
        #expect(revoked?.code.rawValue == "key_revoked")
    }

    @Test("an assertion over other client data is refused: signature_invalid")
    func otherClientData() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let freshness = Freshness.timestamp(milliseconds: FlowBench.milliseconds())
        let (assertion, _) = try device.assertion(freshness: freshness)
        let other = try AssertionBinding(method: "POST", target: "/orders", body: Array("{\"x\":1}".utf8), freshness: freshness)
        let error = await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: other)
        }
        #expect(error?.code.rawValue == "signature_invalid")
        #expect(error?.kind == .refused)
    }
}
