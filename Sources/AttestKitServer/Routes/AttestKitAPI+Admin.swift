import AttestKit
import Foundation
import AttestKitStore
import Hummingbird
import HTTPTypes
import Logging

extension AttestKitAPI {
    /// `GET /v1/keys/{keyId}` (operator): the key record with its risk history.
    func adminKey(_: Request, _ context: ServerRequestContext) async throws -> Response {
        let keyID = try pathKeyID(context)
        guard let record = try await store.key(keyID) else {
            throw APIError(.notFound, "key_not_found", "no key has this identifier")
        }
        let history = try await store.riskHistory(of: keyID, limit: 100)
        return JSONResponse.make(.ok, KeyRecordResponse(record, policy: riskPolicy, riskHistory: history))
    }

    /// `POST /v1/keys/{keyId}/revoke` (operator).
    func adminRevoke(_: Request, _ context: ServerRequestContext) async throws -> Response {
        let keyID = try pathKeyID(context)
        let record: KeyRecord
        do {
            record = try await store.revokeKey(keyID, now: now())
        } catch {
            throw error.code == .keyNotFound
                ? APIError(.notFound, "key_not_found", "no key has this identifier") : APIError(error)
        }
        context.logger.notice("key revoked", metadata: ["keyId": "\(keyID)"])
        return JSONResponse.make(.ok, KeyRecordResponse(record, policy: riskPolicy))
    }

    private func pathKeyID(_ context: ServerRequestContext) throws -> KeyID {
        guard let text = context.parameters.get("keyId") else {
            throw APIError.invalidField("keyId", "is required")
        }
        let decoded = text.removingPercentEncoding ?? text
        return try Field.keyID(decoded)
    }
}
