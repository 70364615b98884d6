import AttestKitFlows
import Hummingbird

extension AttestKitAPI {
    /// `GET /v1/keys/{keyId}` (operator): the key record with its risk history.
    func adminKey(_: Request, _ context: RouteContext) async throws -> Response {
        JSONResponse.make(.ok, try await application.keyReport(keyID: try pathKeyID(context)))
    }

    /// `POST /v1/keys/{keyId}/revoke` (operator).
    func adminRevoke(_: Request, _ context: RouteContext) async throws -> Response {
        JSONResponse.make(.ok, try await application.revokeKey(keyID: try pathKeyID(context)))
    }

    /// The `{keyId}` path parameter as sent (percent-encoded).
    private func pathKeyID(_ context: RouteContext) throws(FlowError) -> String {
        guard let text = context.parameters.get("keyId") else {
            throw FlowError.invalidField("keyId", "is required")
        }
        return text
    }
}
