import AttestKit
import AttestKitStore
import AttestKitWire
import Foundation

extension AssertionGate {
    /// The gate's decision at `time`, wrapped: the store's answers are noted on the way (``RecordingStore``), and a
    /// failure worth recording is written to `recorder` as a bundle before it is thrown.
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
            var key = read.key
            // Refused before the key was read (the timestamp): the bundle still carries the key, so a replay can
            // tell whether the rest would have passed.
            if key == nil, error.code == .timestampOutsideWindow { key = try? await store.key(keyID) }
            let configuration = RecordedConfiguration(
                timestampWindow: timestampWindow, acceptance: acceptance, policy: recorder.policy)
            await recorder.record(
                VerificationBundle(
                    kind: .assertion, recordedAt: now(), verificationTime: time, configuration: configuration,
                    assertion: RecordedAssertion(
                        keyID: keyID, assertion: assertion, clientData: clientData, freshness: freshness, key: key,
                        storeAnswer: read.refusal),
                    outcome: VerificationBundle.Outcome(error)))
            throw error
        }
    }
}
