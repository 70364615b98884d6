import AttestKit
import AttestKitStore
import Foundation

extension AttestationRegistrar {
    /// The registrar's decision, wrapped: the store's answers are noted on the way (``RecordingStore``), and a
    /// failure worth recording is handed to `recorder` as a bundle (``VerificationRecorder/submit(_:)``), then
    /// thrown without waiting for the bundle's file.
    func register(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, appKey: AppKey?, clientData: [UInt8]?,
        now: Date, verifier: AttestationVerifier, admit: (AppID) async throws(FlowError) -> Void,
        recordingTo recorder: VerificationRecorder
    ) async throws(FlowError) -> Registered {
        let answers = RecordingStore(DirectDecisionStore(store: store))
        var admitting = false
        do {
            return try await decide(
                keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: appKey,
                clientData: clientData, now: now, verifier: verifier, store: answers
            ) { (appID: AppID) async throws(FlowError) in
                admitting = true
                try await admit(appID)
                admitting = false
            }
        } catch {
            // A refusal of `admit` (a spent budget) is the caller's, not a verification's; so is another app key
            // than the one bound, a decision on the stored key once the attestation verified (no store code
            // replays it).
            guard VerificationRecorder.records(error), !admitting, error != .appKeyMismatch else { throw error }
            let read = answers.recorded
            var refusal = read.refusal
            // A key the store already holds is the decision's `key_exists`, replayed as the store's refusal at the
            // key step.
            if refusal == nil, read.key != nil, error.code == FlowError(StoreError.keyExists).code {
                refusal = RecordedStoreAnswer(step: .key, code: StoreError.keyExists.code.rawValue)
            }
            let bundle = VerificationBundle(
                kind: .attestation, recordedAt: now, verificationTime: now,
                configuration: RecordedConfiguration(verifier: verifier.configuration, policy: recorder.policy),
                attestation: RecordedAttestation(
                    keyID: keyID, attestation: attestation, challengeID: challengeID, challenge: read.challenge,
                    storeAnswer: refusal, appKey: appKey?.der, clientData: clientData,
                    challengeApp: read.challengeApp),
                outcome: VerificationBundle.Outcome(error))
            recorder.submit { bundle }
            throw error
        }
    }
}
