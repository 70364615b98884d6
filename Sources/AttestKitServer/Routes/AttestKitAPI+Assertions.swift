import AttestKitFlows
import AttestKitWire
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/assertions/verify` (backend): ``AttestKitApplication/verifyAssertion(_:)``.
    func verifyAssertion(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(AssertionRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(.ok, try await application.verifyAssertion(body))
    }

    /// `POST /v1/requests/verify` (backend): the decision route, ``AttestKitApplication/verifyRequest(_:)``.
    func verifyRequest(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(
            RequestVerificationRequest.self, from: &request, limit: JSONRequest.decisionLimit(configuration.bodyLimit))
        return JSONResponse.make(.ok, try await application.verifyRequest(body))
    }
}
