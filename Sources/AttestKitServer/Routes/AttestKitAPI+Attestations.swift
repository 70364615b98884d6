import AttestKit
import AttestKitFlows
import AttestKitWire
import AttestKitStore
import Foundation
import Hummingbird
import Logging

extension AttestKitAPI {
    /// `POST /v1/attestations`: 201 with the key record.
    func attest(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        try limit(attestationsPerIP, clientKey(request, context), name: "attestations_per_ip")
        let body = try await JSONRequest.decode(AttestationRequest.self, from: &request, limit: configuration.bodyLimit)
        let keyID = try Field.keyID(body.keyId)
        let attestation = try Field.bytes(body.attestation, "attestation", maximum: configuration.bodyLimit)
        let challengeID = try Field.challengeID(body.challengeId)
        return try await registering(context) { admit throws(FlowError) in
            let record = try await registrar.register(
                keyID: keyID, attestation: attestation, challengeID: challengeID, now: now(), admit: admit)
            return (record, KeyRecordResponse(record, policy: configuration.policy.riskPolicy))
        }
    }

    /// Runs a registration (`POST /v1/attestations`, `POST /v1/key-attestations`) with the per-app budget as its
    /// `admit` hook, counts and logs its outcome (both are attestation verifications, for the metrics and alerts),
    /// and answers 201 with the record it returns.
    func registering(
        _ context: RouteContext,
        _ register: (_ admit: (AppID) async throws(FlowError) -> Void) async throws(FlowError) -> (
            KeyRecord, KeyRecordResponse
        )
    ) async throws -> Response {
        let start = ContinuousClock.now
        do {
            let (record, answer) = try await register { appID throws(FlowError) in
                // Per-app budget against token farming: counted on verified attestations only, so that forged
                // objects naming an app cannot spend its budget; kept in the store, so that replicas sharing a
                // database share it.
                try await limitShared(
                    "attestations/\(appID)", perMinute: configuration.rateLimits.attestationsPerApp,
                    name: "attestations_per_app")
            }
            metrics.flows.verification("attestation", code: nil, duration: ContinuousClock.now - start)
            metrics.flows.keyRegistered(
                environment: record.environment, validationCategory: record.validationCategory)
            context.logger.info(
                "key registered",
                metadata: [
                    "keyId": "\(record.keyID)", "appId": "\(record.appID)",
                    "environment": "\(record.environment.rawValue)", "appKeyBound": "\(record.appKey != nil)",
                ])
            return JSONResponse.make(.created, answer)
        } catch {
            let code = APIError(any: error).code
            metrics.flows.verification("attestation", code: code, duration: ContinuousClock.now - start)
            context.logger.notice("attestation refused", metadata: ["code": "\(code)"])
            // Thrown as it is: the route's one mapping (`AttestKitAPI.answer`) still sees a storage failure under it.
            throw error
        }
    }
}
