import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import Testing

extension RecordingTests {
    @Test(
        "a key deleted from the store (its device's data erased, perhaps by another replica) is not written to new bundles",
        arguments: [false, true])
    func erasedKeyIsNotRecorded(forged: Bool) async throws {
        let recorder = try Self.recorder()
        let bench = try FlowBench(recorder: recorder)
        let device = try await bench.registeredDevice()
        let now = FlowBench.milliseconds()
        // Accepted once: the gate keeps the key's record in memory.
        let (first, firstBinding) = try device.assertion(freshness: .timestamp(milliseconds: now))
        _ = try await bench.gate.verify(keyID: device.keyID, assertion: first, binding: firstBinding)
        // Deleted in the store only, as another replica's DELETE /v1/keys does: this gate still keeps the record.
        try await bench.store.deleteKey(device.keyID)
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: now + 1))
        let presented =
            forged
            ? try AssertionBinding(
                method: "POST", target: "/orders", body: Array("{\"x\":1}".utf8),
                freshness: .timestamp(milliseconds: now + 1))
            : binding
        let refusal = await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: presented)
        }
        #expect(
            refusal?.code.rawValue == (forged ? "signature_invalid" : "key_not_found"), "\(String(describing: refusal))"
        )
        let bundles = try await Self.bundles(recorder)
        #expect(bundles.count == 1)
        #expect(bundles.first?.assertion != nil && bundles.first?.assertion?.key == nil, "the erased key was recorded")
    }

    @Test("after forget(_:), a key deleted from the store is no longer read from the gate's memory")
    func forgetDropsTheKeptRecord() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let now = FlowBench.milliseconds()
        let (first, firstBinding) = try device.assertion(freshness: .timestamp(milliseconds: now))
        _ = try await bench.gate.verify(keyID: device.keyID, assertion: first, binding: firstBinding)
        try await bench.store.deleteKey(device.keyID)
        bench.gate.forget(device.keyID)
        let (assertion, _) = try device.assertion(freshness: .timestamp(milliseconds: now + 1))
        let forged = try AssertionBinding(
            method: "POST", target: "/orders", body: Array("{\"x\":1}".utf8),
            freshness: .timestamp(milliseconds: now + 1))
        let refusal = await #expect(throws: FlowError.self) {
            try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: forged)
        }
        #expect(refusal?.code == .keyNotFound, "\(String(describing: refusal))")
    }
}
