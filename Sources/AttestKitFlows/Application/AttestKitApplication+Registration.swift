public import AttestKitWire
import AttestKit
import AttestKitStore
import Foundation
import Logging

extension AttestKitApplication {
    /// `POST /v1/attestations`: verifies an attestation and registers its key, behind the budgets of attestations
    /// per client address (`rate-limit.attestations-per-ip`) and, once verified, per app
    /// (`rate-limit.attestations-per-app`, shared by replicas through the store).
    ///
    /// With `clientData` (the challenge's bytes followed by the app's, `AttestationClientData`), the attestation is
    /// verified over those bytes and the answer carries the app's bytes as `appData`.
    ///
    /// - Returns: The key record (201).
    /// - Throws: 429 `rate_limited`; `invalid_field` (`clientData`: not Base64, longer than
    ///   `AttestationClientData.maximumLength` bytes, or no longer than a challenge), before the challenge is
    ///   consumed; the registrar's codes (``AttestationRegistrar``), `client_data_challenge_mismatch` among them.
    public func registerAttestation(
        _ request: AttestationRequest, client: String
    ) async throws(FlowError) -> KeyRecordResponse {
        try await perform { () async throws(FlowError) in
            let (keyID, attestation, challengeID) = try admitAttestation(
                keyId: request.keyId, attestation: request.attestation, challengeId: request.challengeId,
                client: client)
            let clientData = try request.clientData.map { text throws(FlowError) in
                try Field.bytes(text, "clientData", maximum: AttestationClientData.maximumLength)
            }
            return try await registering(keyID) { admit throws(FlowError) in
                let registered = try await registrar.registerVerified(
                    keyID: keyID, attestation: attestation, challengeID: challengeID, clientData: clientData,
                    now: now(), admit: admit)
                var answer = KeyRecordResponse(
                    registered.record, policy: configuration.policy.riskPolicy,
                    keyAccessControl: registered.attestation.keyAccessControl)
                answer.appData = registered.appData.map { Base64.encode($0) }
                return (registered.record, answer)
            }
        }
    }

    /// `POST /v1/key-attestations`: an attestation that binds an app key (docs/key-attestation.md), with the same
    /// budgets as ``registerAttestation(_:client:)``.
    ///
    /// - Returns: The key record, the app key's thumbprint and, with a CA configured, its certificate (201).
    /// - Throws: 429 `rate_limited`; ``KeyAttestation``'s codes.
    public func registerKeyAttestation(
        _ request: KeyAttestationRequest, client: String
    ) async throws(FlowError) -> KeyAttestationResponse {
        try await perform { () async throws(FlowError) in
            let (keyID, attestation, challengeID) = try admitAttestation(
                keyId: request.keyId, attestation: request.attestation, challengeId: request.challengeId,
                client: client)
            let appKey = try Field.bytes(
                request.appKey, "appKey", maximum: KeyAttestationClientData.maximumAppKeyLength)
            return try await registering(keyID) { admit throws(FlowError) in
                let registered = try await keyAttestation.register(
                    keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: now(),
                    admit: admit)
                return (registered.record, registered.response(policy: configuration.policy.riskPolicy))
            }
        }
    }

    /// Takes one attestation from the client's budget (`attestations_per_ip`), before anything of the attestation is
    /// looked at, then reads the fields every attestation carries.
    private func admitAttestation(
        keyId: String, attestation: String, challengeId: String, client: String
    ) throws(FlowError) -> (KeyID, [UInt8], ChallengeID) {
        try limit(attestationsPerClient, client, name: "attestations_per_ip")
        return (
            try Field.keyID(keyId), try Field.bytes(attestation, "attestation", maximum: configuration.bodyLimit),
            try Field.challengeID(challengeId)
        )
    }

    /// Runs a registration of `keyID` with the per-app budget as its `admit` hook,
    /// and counts and logs its outcome (both routes are attestation verifications, for the metrics and alerts).
    private func registering<Answer>(
        _ keyID: KeyID,
        _ register: (_ admit: (AppID) async throws(FlowError) -> Void) async throws(FlowError) -> (KeyRecord, Answer)
    ) async throws(FlowError) -> Answer {
        let start = ContinuousClock.now
        do {
            // The ramp decided when the challenge was given (bound to the key and the app it admitted, which the
            // registrar requires): an attestation is already spent here, so deferring it would only cost another.
            let (record, answer) = try await register { appID throws(FlowError) in
                // Per-app budget against token farming: counted on verified attestations only, so that forged
                // objects naming an app cannot spend its budget; kept in the store, so that replicas sharing a
                // database share it.
                try await limitShared(
                    Self.attestationBudgetName(appID), perMinute: configuration.rateLimits.attestationsPerApp,
                    name: "attestations_per_app")
            }
            metrics.verification("attestation", code: nil, duration: ContinuousClock.now - start)
            metrics.keyRegistered(environment: record.environment, validationCategory: record.validationCategory)
            logger.info(
                "key registered",
                metadata: [
                    "keyId": "\(record.keyID)", "appId": "\(record.appID)",
                    "environment": "\(record.environment.rawValue)", "appKeyBound": "\(record.appKey != nil)",
                ])
            return answer
        } catch {
            metrics.verification("attestation", code: error.code.rawValue, duration: ContinuousClock.now - start)
            logger.notice("attestation refused", metadata: ["code": "\(error.code)"])
            throw error
        }
    }

    /// The name of `appID`'s per-app attestation budget in the store: `attestations/` and the App ID, or, for an
    /// App ID too long for a budget's name (over 243 bytes: App IDs may have 254), `attestations/` and the App ID's
    /// hex SHA-256, as the ramp names its budgets: a name that does not fit would refuse every attestation of the app.
    static func attestationBudgetName(_ appID: AppID) -> String {
        let readable = "attestations/\(appID)"
        guard readable.utf8.count > 256 else { return readable }
        return "attestations/" + Hex.encode(appID.rpIDHash)
    }

    /// Takes one request from the store's shared budget `budget` (`perMinute` 0: no limit), or throws 429; a store
    /// that cannot answer refuses the request (503), never lets it through.
    private func limitShared(_ budget: String, perMinute: Int, name: String) async throws(FlowError) {
        guard perMinute > 0 else { return }
        let wait: Int?
        do {
            wait = try await store.take(from: try RateBudget(name: budget, perMinute: perMinute), now: now())
        } catch {
            throw FlowError(converting: error) ?? FlowError(.internalError, .internalFailure, "internal error")
        }
        if let wait { throw rateLimited(name, retryAfter: wait) }
    }
}
