import AttestKit
import AttestKitStore
import AttestKitWire
import Foundation

extension AssertionGate {
    /// The gate's decision at `time`, wrapped: the store's answers are noted on the way (``RecordingStore``), and a
    /// failure worth recording is handed to `recorder` as a bundle (``VerificationRecorder/submit(_:)``), then thrown
    /// without waiting for the bundle's file.
    func verify(
        keyID: KeyID, assertion: [UInt8], clientData: ClientDataInput, freshness: Freshness, at time: Date,
        recordingTo recorder: VerificationRecorder, records: (FlowError) -> Bool = { _ in true }
    ) async throws(FlowError) -> AcceptedAssertion {
        let answers = RecordingStore(keys)
        do {
            return try await decide(
                keyID: keyID, assertion: assertion, clientData: clientData, freshness: freshness, at: time,
                store: answers)
        } catch {
            guard VerificationRecorder.records(error), records(error) else { throw error }
            let read = answers.recorded
            let configuration = RecordedConfiguration(
                timestampWindow: timestampWindow, acceptance: acceptance, policy: recorder.policy)
            let (recordedAt, store) = (now(), store)
            recorder.submit {
                var key = read.key
                // Refused before the key was read (the timestamp): the bundle still carries the key, so a replay can
                // tell whether the rest would have passed.
                if key == nil, error.code == .timestampOutsideWindow { key = try? await store.key(keyID) }
                // A key read from memory that the store no longer has (deleted: a device's data erased, perhaps on
                // another replica) is not written to a new bundle: what was erased stays erased.
                if key != nil, await Self.isGone(keyID, in: store, refusal: error) { key = nil }
                return VerificationBundle(
                    kind: .assertion, recordedAt: recordedAt, verificationTime: time, configuration: configuration,
                    assertion: RecordedAssertion(
                        keyID: keyID, assertion: assertion, clientData: clientData, freshness: freshness, key: key,
                        storeAnswer: read.refusal),
                    outcome: VerificationBundle.Outcome(error))
            }
            throw error
        }
    }

    /// Whether the store no longer has `keyID`: the gate's refusal says so (`key_not_found` at the counter advance),
    /// or a read of the store finds nothing; a store that cannot answer is taken as still having it.
    private static func isGone(_ keyID: KeyID, in store: any AttestationStore, refusal: FlowError) async -> Bool {
        if refusal.code == .keyNotFound { return true }
        do {
            return try await store.keyWithoutReceipt(keyID) == nil
        } catch {
            return false
        }
    }
}
