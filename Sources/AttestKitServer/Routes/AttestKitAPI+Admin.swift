import AttestKit
import AttestKitFlows
import AttestKitWire
import Foundation
import AttestKitStore
import Hummingbird
import HTTPTypes
import Logging

extension AttestKitAPI {
    /// `GET /v1/keys/{keyId}` (operator): the key record with its risk history.
    func adminKey(_: Request, _ context: RouteContext) async throws -> Response {
        let report = try await keys.report(of: try pathKeyID(context))
        return JSONResponse.make(
            .ok,
            KeyRecordResponse(report.key, policy: configuration.policy.riskPolicy, riskHistory: report.riskHistory))
    }

    /// `POST /v1/keys/{keyId}/revoke` (operator).
    func adminRevoke(_: Request, _ context: RouteContext) async throws -> Response {
        let keyID = try pathKeyID(context)
        let record = try await keys.revoke(keyID)
        context.logger.notice("key revoked", metadata: ["keyId": "\(keyID)"])
        return JSONResponse.make(.ok, KeyRecordResponse(record, policy: configuration.policy.riskPolicy))
    }

    private func pathKeyID(_ context: RouteContext) throws -> KeyID {
        guard let text = context.parameters.get("keyId") else {
            throw APIError.invalidField("keyId", "is required")
        }
        let decoded = text.removingPercentEncoding ?? text
        return try Field.keyID(decoded)
    }
}
