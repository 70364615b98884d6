import AttestKit
import AttestKitStore
import Foundation

/// Re-runs a recorded verification offline, exactly: the same flow (``AttestationRegistrar`` or ``AssertionGate``)
/// with the recorded inputs, at the recorded moment, under the recorded configuration, against a store that answers
/// what the recorded store answered. Support tells "a clock 4 s off" from "the wrong team id" without the device.
///
/// ```swift
/// let bundle = try VerificationBundle(json: bytes)
/// let result = await VerificationReplay.replay(bundle)
/// print(result.outcome.map(\.description) ?? "verifies")   // timestamp_outside_window (check: freshness): ...
/// ```
public enum VerificationReplay {
    /// What a replay found.
    public struct Result: Sendable, Hashable {
        /// The bundle replayed.
        public let bundle: VerificationBundle
        /// The failure now, or `nil` when the recorded inputs verify.
        public let outcome: VerificationBundle.Outcome?

        /// Whether the replay failed with the recorded code.
        public var reproduces: Bool { outcome?.code == bundle.outcome.code }
    }

    /// Replays `bundle`.
    /// - Throws: `bundle_invalid` when its inputs or configuration cannot be used (bad Base64, unknown App ID
    ///   form, an unknown store answer).
    public static func replay(_ bundle: VerificationBundle) async throws(FlowError) -> Result {
        let time = bundle.verificationDate
        do throws(FlowError) {
            switch bundle.kind {
            case .attestation:
                guard let recorded = bundle.attestation else { throw invalid("no attestation is recorded") }
                try await replay(recorded, configuration: bundle.configuration, at: time)
            case .assertion:
                guard let recorded = bundle.assertion else { throw invalid("no assertion is recorded") }
                try await replay(recorded, configuration: bundle.configuration, at: time)
            }
        } catch  where error.code == .bundleInvalid {
            throw error
        } catch {
            return Result(bundle: bundle, outcome: VerificationBundle.Outcome(error))
        }
        return Result(bundle: bundle, outcome: nil)
    }

    private static func replay(
        _ recorded: RecordedAttestation, configuration: RecordedConfiguration, at time: Date
    ) async throws(FlowError) {
        let keyID = try keyID(recorded.keyId)
        let object = try bytes(recorded.attestation, "attestation")
        let challengeID: ChallengeID
        do {
            challengeID = try ChallengeID(string: recorded.challengeId)
        } catch {
            throw invalid("the challenge id is not one of the service's")
        }
        let store = ReplayStore(
            challenge: try recorded.challenge.map { text throws(FlowError) in try bytes(text, "challenge") },
            challengeApp: try recorded.challengeApp.map { text throws(FlowError) in
                let app = try bytes(text, "challengeApp")
                guard app.count == 32 else { throw invalid("challengeApp is not 32 bytes of Base64") }
                return app
            },
            key: nil, answer: try known(recorded.storeAnswer))
        // The recorded deployment policy runs where it ran when recorded: inside the verifier, after Apple's checks.
        let verifier = AttestationVerifier(
            configuration: try configuration.verifierConfiguration(),
            policy: try configuration.deploymentPolicy().attestationPolicy)
        let registrar = AttestationRegistrar(verifier: verifier, store: store)
        // A key attestation replays with its app key (the client data binds it).
        // The service records only an app key it could read: one it cannot is an edited bundle.
        let appKey = try recorded.appKey.map { text throws(FlowError) in
            do throws(FlowError) {
                return try AppKey(request: bytes(text, "appKey"))
            } catch  where error.code != .bundleInvalid {
                throw invalid("the app key is not one the service reads")
            }
        }
        // An attestation over the challenge and the app's bytes replays with the client data it sent.
        let clientData = try recorded.clientData.map { text throws(FlowError) in try bytes(text, "clientData") }
        _ = try await registrar.register(
            keyID: keyID, attestation: object, challengeID: challengeID, appKey: appKey, clientData: clientData,
            now: time
        ) { _ in }
    }

    private static func replay(
        _ recorded: RecordedAssertion, configuration: RecordedConfiguration, at time: Date
    ) async throws(FlowError) {
        let keyID = try keyID(recorded.keyId)
        let assertion = try bytes(recorded.assertion, "assertion")
        var key: KeyRecord?
        if let stored = recorded.key {
            guard let environment = AppAttestEnvironment(rawValue: stored.environment),
                ["active", "revoked"].contains(stored.state)
            else { throw invalid("the recorded key's environment or state is unknown") }
            let appID: AppID
            do {
                appID = try AppID(stored.appId)
            } catch {
                throw invalid("the recorded key's App ID is malformed")
            }
            key = KeyRecord(
                keyID: keyID, publicKeyX963: try bytes(stored.publicKey, "key.publicKey"), appID: appID,
                environment: environment, counter: stored.counter, receipt: nil, receiptCreatedAt: nil,
                receiptRefreshAt: nil, riskMetric: nil, osVersion: nil, bundleVersion: stored.bundleVersion,
                validationCategory: stored.validationCategory, appKey: nil, createdAt: time, lastAssertionAt: nil,
                revokedAt: stored.state == "revoked" ? time : nil)
        }
        let window = configuration.timestampWindow ?? 300
        guard window.isFinite, window >= 0 else { throw invalid("the timestamp window is not a number of seconds") }
        // The recorded key acceptance and assertion policy run where they ran: after the key is read, and after the
        // signature and counter verified.
        let policy = configuration.validationCategoryChange == nil ? nil : try configuration.deploymentPolicy()
        let gate = AssertionGate(
            store: ReplayStore(challenge: nil, key: key, answer: try known(recorded.storeAnswer)),
            timestampWindow: window, acceptance: try configuration.keyAcceptance(), policy: policy?.assertionPolicy,
            stepsUpOnValidationCategoryChange: policy?.stepsUpOnValidationCategoryChange ?? false, now: { time })
        _ = try await gate.verify(
            keyID: keyID, assertion: assertion, clientData: try recorded.recordedClientData(),
            freshness: try recorded.recordedFreshness())
    }

    private static func known(_ answer: RecordedStoreAnswer?) throws(FlowError) -> RecordedStoreAnswer? {
        guard let answer else { return nil }
        guard StoreError.Code.allCases.contains(where: { $0.rawValue == answer.code }) else {
            throw invalid("the recorded store answer \(answer.code) is not a store code")
        }
        return answer
    }

    private static func keyID(_ text: String) throws(FlowError) -> KeyID {
        do {
            return try KeyID(string: text)
        } catch {
            throw invalid("the key id is not 32 bytes of Base64")
        }
    }

    /// The bytes of a recorded Base64 field.
    static func bytes(_ text: String, _ field: String) throws(FlowError) -> [UInt8] {
        guard let bytes = Base64.decode(text) else { throw invalid("\(field) is not Base64") }
        return bytes
    }

    private static func invalid(_ reason: String) -> FlowError {
        FlowError(.bundleInvalid, .malformed, reason)
    }
}
