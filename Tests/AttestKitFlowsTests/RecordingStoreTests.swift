import AttestKit
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

@testable import AttestKitFlows

/// Recording wraps the decisions: the gate and the registrar decide against a `DecisionStore`, and a
/// `RecordingStore` around it notes what the store answered, with no recording parameter in the decision.
struct RecordingStoreTests {
    @Test("the gate's decision through a recording store: the key the gate kept and the store's refusal at its step")
    func gate() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let first = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        _ = try await bench.gate.verify(keyID: device.keyID, assertion: first.assertion, binding: first.binding)
        // Revoked in the store after the gate kept the key: the kept key verifies, the counter's advance refuses.
        _ = try await bench.store.revokeKey(device.keyID, now: Date())
        let second = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let answers = RecordingStore(bench.gate.keys)
        await #expect(throws: FlowError(StoreError.keyRevoked)) {
            try await bench.gate.decide(
                keyID: device.keyID, assertion: second.assertion, clientData: second.binding.clientData,
                freshness: second.binding.freshness, at: Date(), store: answers)
        }
        #expect(answers.recorded.key?.state == .active)
        #expect(answers.recorded.key?.counter == 1)
        #expect(answers.recorded.refusal == RecordedStoreAnswer(step: .counter, code: "key_revoked"))
        #expect(answers.recorded.challenge == nil)
        // The gate forgot the key the store refused: the next read is the store's, revoked.
        let again = RecordingStore(bench.gate.keys)
        await #expect(throws: FlowError(StoreError.keyRevoked)) {
            try await bench.gate.decide(
                keyID: device.keyID, assertion: second.assertion, clientData: second.binding.clientData,
                freshness: second.binding.freshness, at: Date(), store: again)
        }
        #expect(again.recorded.key?.state == .revoked)
        #expect(again.recorded.refusal == nil)
    }

    @Test("the registrar's decision through a recording store: the challenge handed out and the key it found")
    func registrar() async throws {
        let bench = try FlowBench()
        let device = bench.device()
        let twin = try device.twin()
        try await bench.register(device)
        let challenge = try await bench.issuer.issue(purpose: .attest)
        let attestation = try twin.device.attestKey(
            device.keyID, clientDataHash: Array(SHA256.hash(data: challenge.bytes)))
        let answers = RecordingStore(DirectDecisionStore(store: bench.store))
        await #expect(throws: FlowError(StoreError.keyExists)) {
            try await bench.registrar().decide(
                keyID: device.keyID, attestation: attestation, challengeID: challenge.id, appKey: nil, now: Date(),
                verifier: bench.verifier, store: answers
            ) { _ in }
        }
        #expect(answers.recorded.challenge == challenge.bytes)
        #expect(answers.recorded.key?.keyID == device.keyID)
        #expect(answers.recorded.refusal == nil, "a known key is the decision's refusal, not the store's")
        // The same challenge again: the store's refusal at the challenge step, and nothing handed out.
        let consumed = RecordingStore(DirectDecisionStore(store: bench.store))
        await #expect(throws: FlowError.self) {
            try await bench.registrar().decide(
                keyID: device.keyID, attestation: attestation, challengeID: challenge.id, appKey: nil, now: Date(),
                verifier: bench.verifier, store: consumed
            ) { _ in }
        }
        #expect(consumed.recorded.challenge == nil)
        #expect(consumed.recorded.refusal == RecordedStoreAnswer(step: .challenge, code: "challenge_consumed"))
    }
}
