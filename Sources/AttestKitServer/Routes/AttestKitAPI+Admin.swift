import AttestKit
import Foundation
import AttestKitStore
import Hummingbird
import HTTPTypes
import Logging

extension AttestKitAPI {
    /// `GET /v1/keys/{keyId}` (admin): the key record with its risk history.
    func adminKey(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        try authorizeAdmin(request)
        let keyID = try pathKeyID(context)
        guard let record = try await store.key(keyID) else {
            throw APIError(.notFound, "key_not_found", "no key has this identifier")
        }
        let history = try await store.riskHistory(of: keyID, limit: 100)
        return JSONResponse.make(.ok, KeyRecordResponse(record, policy: riskPolicy, riskHistory: history))
    }

    /// `POST /v1/keys/{keyId}/revoke` (admin).
    func adminRevoke(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        try authorizeAdmin(request)
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

    /// Checks `Authorization: Bearer <admin token>` in constant time.
    private func authorizeAdmin(_ request: Request) throws {
        guard let token = configuration.adminToken else {
            throw APIError(
                .serviceUnavailable, "admin_not_configured", "no admin token is configured (admin.token)")
        }
        let presented = request.headers[.authorization].flatMap { value -> Substring? in
            let prefix = "Bearer "
            guard value.count > prefix.count, value.prefix(prefix.count).lowercased() == prefix.lowercased() else {
                return nil
            }
            return value.dropFirst(prefix.count)
        }
        guard let presented, ConstantTime.equal(Array(presented.utf8), Array(token.utf8)) else {
            throw APIError(.unauthorized, "admin_unauthorized", "a valid admin bearer token is required")
        }
    }

    private func pathKeyID(_ context: ServerRequestContext) throws -> KeyID {
        guard let text = context.parameters.get("keyId") else {
            throw APIError.invalidField("keyId", "is required")
        }
        let decoded = text.removingPercentEncoding ?? text
        return try Field.keyID(decoded)
    }
}
