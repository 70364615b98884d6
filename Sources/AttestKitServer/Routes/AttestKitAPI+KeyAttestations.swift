import AttestKitFlows
import AttestKitWire
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/key-attestations`: an attestation that binds an app key (docs/key-attestation.md); 201 with the
    /// key record, the app key's thumbprint and, with a CA configured, its certificate. The same budgets as
    /// `POST /v1/attestations`: per client address, and per app once verified.
    func attestKey(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        try limit(attestationsPerIP, clientKey(request, context), name: "attestations_per_ip")
        let body = try await JSONRequest.decode(
            KeyAttestationRequest.self, from: &request, limit: configuration.bodyLimit)
        let keyID = try Field.keyID(body.keyId)
        let attestation = try Field.bytes(body.attestation, "attestation", maximum: configuration.bodyLimit)
        let challengeID = try Field.challengeID(body.challengeId)
        let appKey = try Field.bytes(body.appKey, "appKey", maximum: KeyAttestationClientData.maximumAppKeyLength)
        return try await registering(context) { admit throws(FlowError) in
            let registered = try await keyAttestation.register(
                keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, now: now(),
                admit: admit)
            return (registered.record, registered.response(policy: configuration.policy.riskPolicy))
        }
    }
}
