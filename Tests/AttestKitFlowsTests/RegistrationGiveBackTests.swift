import AttestKit
@testable import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Crypto
import Foundation
import Synchronization
import Testing

/// A store unavailable after the challenge was consumed says "not now", not "not this attestation": the challenge is
/// given back, so that the client's post of the same attestation later registers the key (Apple attests a key once).
@Suite("Registration: the challenge given back when the store fails after consuming it")
struct RegistrationGiveBackTests {
    /// The bench's store, whose key read or key write fails once as unavailable.
    final class Blip: DecisionStore {
        enum Where: Sendable { case keyRead, keyWrite }
        let base: DirectDecisionStore
        let failing: Where
        let remaining = Mutex(1)
        /// Whether the blip comes with the request's task cancelled (a server stopping past its grace period), and
        /// the store refuses work for a cancelled task, as PostgreSQL's does.
        let cancels: Bool

        init(_ store: any AttestationStore, failing: Where, cancels: Bool = false) {
            base = DirectDecisionStore(store: store)
            self.failing = failing
            self.cancels = cancels
        }

        private func blip(_ place: Where) throws(StoreError) {
            guard place == failing,
                remaining.withLock({ count in
                    defer { count = 0 }; return count > 0
                })
            else { return }
            if cancels { withUnsafeCurrentTask { $0?.cancel() } }
            throw StoreError(.storageUnavailable, "a blip")
        }

        func consumeChallenge(
            _ id: ChallengeID, purpose: ChallengePurpose, keyID: KeyID?, now: Date
        ) async throws(StoreError) -> StoredChallenge {
            try await base.consumeChallenge(id, purpose: purpose, keyID: keyID, now: now)
        }

        func key(_ keyID: KeyID) async throws(StoreError) -> KeyRecord? {
            try blip(.keyRead)
            return try await base.key(keyID)
        }

        func advanceCounter(
            of keyID: KeyID, to counter: UInt32, now: Date, usedSince: Date?
        ) async throws(StoreError) -> KeyRecord {
            try await base.advanceCounter(of: keyID, to: counter, now: now, usedSince: usedSince)
        }

        func registerKey(_ registration: KeyRegistration, now: Date) async throws(StoreError) -> KeyRecord {
            try blip(.keyWrite)
            return try await base.registerKey(registration, now: now)
        }

        func releaseChallenge(_ challenge: StoredChallenge) async throws(StoreError) {
            if cancels, Task.isCancelled { throw StoreError(.storageUnavailable, "the task was cancelled") }
            try await base.releaseChallenge(challenge)
        }
    }

    @Test(
        "a 503 after the challenge was consumed leaves the same attestation postable again, the request's task cancelled too",
        arguments: [Blip.Where.keyRead, .keyWrite], [false, true])
    func givenBack(failing: Blip.Where, cancelled: Bool) async throws {
        let bench = try FlowBench()
        let device = bench.device()
        let registrar = bench.registrar()
        let verifier = try #require(registrar.verifier)
        let challenge = try await bench.issuer.issue(purpose: .attest)
        let attestation = try device.device.attestKey(
            device.keyID, clientDataHash: Array(SHA256.hash(data: challenge.bytes)))
        let store = Blip(bench.store, failing: failing, cancels: cancelled)
        let first = await Task {
            await #expect(throws: FlowError.self) {
                _ = try await registrar.decide(
                    keyID: device.keyID, attestation: attestation, challengeID: challenge.id, appKey: nil, now: Date(),
                    verifier: verifier, store: store, admit: { _ in })
            }
        }.value
        #expect(first?.code.rawValue == "storage_unavailable")
        #expect(try await bench.store.key(device.keyID) == nil)
        // The client posts the same attestation again: registered.
        let record = try await registrar.register(
            keyID: device.keyID, attestation: attestation, challengeID: challenge.id, now: Date())
        #expect(record.keyID == device.keyID)
        // And only once: the challenge is consumed for good now.
        let again = await #expect(throws: FlowError.self) {
            _ = try await registrar.register(
                keyID: device.keyID, attestation: attestation, challengeID: challenge.id, now: Date())
        }
        #expect(again?.code.rawValue == "challenge_consumed")
    }
}
