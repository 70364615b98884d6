import AttestKitFlows
import AttestKitWire
import Foundation
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/tokens` (app): the request carries the assertion headers over itself (method, target, body), the
    /// gate accepts that assertion once, and the answer is a session token for the key. 503
    /// `tokens_not_configured` before anything is read when no signing key is configured.
    func issueToken(_ request: Request, _ context: RouteContext) async throws -> Response {
        guard let tokens else { throw FlowError.tokensNotConfigured }
        var request = request
        let headers = try AssertionHeaders { AttestKitHeaders.value($0, in: request.headers) }
        let body = try await request.collectBody(upTo: configuration.bodyLimit)
        let binding = try AssertionBinding(
            method: request.method.rawValue, target: request.head.path ?? "/", body: body.readableBytesView,
            freshness: headers.freshness)
        let start = ContinuousClock.now
        let accepted: AcceptedAssertion
        do {
            accepted = try await gate.verify(keyID: headers.keyID, assertion: headers.assertion, binding: binding)
            metrics.flows.verification("assertion", code: nil, duration: ContinuousClock.now - start)
        } catch {
            metrics.flows.verification(
                "assertion", code: APIError(any: error).code, duration: ContinuousClock.now - start)
            throw error
        }
        let issued = try tokens.issue(for: accepted)
        return JSONResponse.make(
            .created, TokenResponse(token: issued.token, expiresAt: APITime.format(issued.expiresAt)))
    }

    /// `POST /v1/tokens/consume` (backend): the claims of a valid token the first time, 409 `token_consumed` after.
    func consumeToken(_ request: Request, _ context: RouteContext) async throws -> Response {
        guard let tokens else { throw FlowError.tokensNotConfigured }
        var request = request
        let body = try await JSONRequest.decode(
            TokenConsumeRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(.ok, try await tokens.consume(body.token))
    }

    /// `GET /.well-known/jwks.json` (anyone): the keys that verify tokens, cacheable for five minutes.
    func tokenKeys(_: Request, _: RouteContext) throws -> Response {
        guard let tokens else { throw FlowError.tokensNotConfigured }
        var response = JSONResponse.make(.ok, tokens.keySet)
        response.headers[.cacheControl] = "public, max-age=300"
        return response
    }
}
