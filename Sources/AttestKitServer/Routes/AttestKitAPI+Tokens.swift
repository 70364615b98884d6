import AttestKitFlows
import AttestKitWire
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/tokens` (app): a session token for a request that proves itself
    /// (``AttestKitApplication/issueToken(lookup:method:target:body:client:)``).
    func issueToken(_ request: Request, _ context: RouteContext) async throws -> Response {
        guard application.tokens != nil else { throw FlowError.tokensNotConfigured }
        var request = request
        let body = try await request.collectBody(upTo: configuration.bodyLimit)
        let headers = request.headers
        let issued = try await application.issueToken(
            lookup: { AttestKitHeaders.value($0, in: headers) }, method: request.method.rawValue,
            target: request.head.path ?? "/", body: body.readableBytesView, client: clientKey(request, context))
        return JSONResponse.make(.created, issued)
    }

    /// `POST /v1/tokens/consume` (backend): ``AttestKitApplication/consumeToken(_:)``.
    func consumeToken(_ request: Request, _ context: RouteContext) async throws -> Response {
        guard application.tokens != nil else { throw FlowError.tokensNotConfigured }
        var request = request
        let body = try await JSONRequest.decode(
            TokenConsumeRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(.ok, try await application.consumeToken(body))
    }

    /// `POST /v1/tokens/introspect` (backend): ``AttestKitApplication/introspectToken(_:)``.
    func introspectToken(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(
            TokenIntrospectionRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(.ok, try await application.introspectToken(body))
    }

    /// `GET /.well-known/jwks.json` (anyone): the keys that verify tokens, cacheable for five minutes.
    func tokenKeys(_: Request, _: RouteContext) throws -> Response {
        var response = JSONResponse.make(.ok, try application.tokenKeys())
        response.headers[.cacheControl] = "public, max-age=300"
        return response
    }
}
