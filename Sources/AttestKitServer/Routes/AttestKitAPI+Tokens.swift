import AttestKit
import AttestKitFlows
import AttestKitWire
import Foundation
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/tokens` (app): the request carries the assertion headers over itself (method, target, body), the
    /// gate accepts that assertion once, and the answer is a session token for the key (trust `app_attest`). A
    /// request without assertion headers may carry a debug token instead (`X-AttestKit-Debug-Token`, where the
    /// deployment has some): a token at trust `debug`, counted apart (verification kind `debug_token`); or, where
    /// `tokens.device-tokens` is `accept`, a DeviceCheck token (`X-AttestKit-Device-Token`), validated by Apple and used
    /// up: a token at trust `devicecheck` (verification kind `device_token`). 503 `tokens_not_configured` before
    /// anything is read when no signing key is configured.
    func issueToken(_ request: Request, _ context: RouteContext) async throws -> Response {
        guard let tokens else { throw FlowError.tokensNotConfigured }
        var request = request
        let lookup = { (name: String) in AttestKitHeaders.value(name, in: request.headers) }
        let start = ContinuousClock.now
        let issued: TokenService.Issued
        if !AssertionHeaders.presented(lookup: lookup),
            let debugToken = try lookup(AttestKitHeaderNames.debugToken).single()
        {
            issued = try await measured("debug_token", since: start) {
                try tokens.issue(debugToken: debugToken, appIDs: configuration.appIDs)
            }
        } else if !AssertionHeaders.presented(lookup: lookup),
            let deviceToken = try lookup(AttestKitHeaderNames.deviceToken).single()
        {
            let client = clientKey(request, context)
            issued = try await measured("device_token", since: start) {
                try await tokens.issue(
                    deviceToken: deviceToken, client: client, appIDs: configuration.appIDs,
                    environment: configuration.apple?.deviceCheckEnvironment ?? .production)
            }
        } else {
            let headers = try AssertionHeaders(lookup: lookup)
            let body = try await request.collectBody(upTo: configuration.bodyLimit)
            let binding = try AssertionBinding(
                method: request.method.rawValue, target: request.head.path ?? "/", body: body.readableBytesView,
                freshness: headers.freshness)
            let accepted = try await measured("assertion", since: start) {
                try await gate.verify(keyID: headers.keyID, assertion: headers.assertion, binding: binding)
            }
            issued = try tokens.issue(for: accepted)
        }
        metrics.flows.tokenIssued(trust: issued.claims.trust)
        return JSONResponse.make(
            .created, TokenResponse(token: issued.token, expiresAt: APITime.format(issued.expiresAt)))
    }

    /// Runs `body`, counting it as one verification of `kind` with its outcome.
    private func measured<T>(
        _ kind: String, since start: ContinuousClock.Instant, _ body: () async throws -> T
    ) async throws -> T {
        do {
            let value = try await body()
            metrics.flows.verification(kind, code: nil, duration: ContinuousClock.now - start)
            return value
        } catch {
            metrics.flows.verification(kind, code: APIError(any: error).code, duration: ContinuousClock.now - start)
            throw error
        }
    }

    /// `POST /v1/tokens/consume` (backend): the claims of a valid token the first time, 409 `token_consumed` after.
    func consumeToken(_ request: Request, _ context: RouteContext) async throws -> Response {
        guard let tokens else { throw FlowError.tokensNotConfigured }
        var request = request
        let body = try await JSONRequest.decode(
            TokenConsumeRequest.self, from: &request, limit: configuration.bodyLimit)
        return JSONResponse.make(.ok, try await tokens.consume(body.token))
    }

    /// `POST /v1/tokens/introspect` (backend): RFC 7662 introspection of a session token, or with `tokenTypeHint`
    /// `app_key_certificate` of an app key certificate (its Base64 DER), that never consumes anything. 200
    /// `{"active": false}` for anything not alive now (a revoked key's, expired, malformed, unknown); 200 with what
    /// it says for a live one. 400 `invalid_field` for an unknown hint; 503 `tokens_not_configured` for a session
    /// token without a signing key, `storage_unavailable` when the store cannot answer.
    func introspectToken(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(
            TokenIntrospectionRequest.self, from: &request, limit: configuration.bodyLimit)
        let answer: TokenIntrospectionResponse
        switch body.tokenTypeHint {
        case nil, TokenIntrospectionRequest.sessionToken:
            guard let tokens else { throw FlowError.tokensNotConfigured }
            answer = try await tokens.introspect(body.token)
        case TokenIntrospectionRequest.appKeyCertificate:
            if let der = Base64.decode(body.token) {
                answer = try await keyAttestation.introspect(certificate: der, now: now())
            } else {
                answer = .inactive
            }
        default:
            throw FlowError.invalidField("tokenTypeHint", "is session_token or app_key_certificate")
        }
        return JSONResponse.make(.ok, answer)
    }

    /// `GET /.well-known/jwks.json` (anyone): the keys that verify tokens, cacheable for five minutes.
    func tokenKeys(_: Request, _: RouteContext) throws -> Response {
        guard let tokens else { throw FlowError.tokensNotConfigured }
        var response = JSONResponse.make(.ok, tokens.keySet)
        response.headers[.cacheControl] = "public, max-age=300"
        return response
    }
}
