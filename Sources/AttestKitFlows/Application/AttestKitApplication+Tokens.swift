public import AttestKitWire
import AttestKit
import Foundation

extension AttestKitApplication {
    /// `POST /v1/tokens` (app): a session token for a request that proves itself with the assertion headers over
    /// itself (method, target, body), accepted once by the gate: trust `app_attest`. Without assertion headers a
    /// request may carry a debug token instead (`X-AttestKit-Debug-Token`, where the deployment has some): trust
    /// `debug`, counted apart (verification kind `debug_token`); or, with `tokens.device-tokens` `accept`, a
    /// DeviceCheck token (`X-AttestKit-Device-Token`), validated by Apple and used up: trust `devicecheck`
    /// (verification kind `device_token`).
    ///
    /// - Parameters:
    ///   - lookup: Finds a header of the request by name.
    ///   - method: The request's method.
    ///   - target: The request's path and query as sent.
    ///   - body: The request's body.
    ///   - client: The client's address as a rate-limit key (the DeviceCheck budget).
    /// - Returns: The token and its expiry (201).
    /// - Throws: 503 `tokens_not_configured` without a signing key; the gate's, the debug tokens' or the
    ///   DeviceCheck fallback's codes.
    public func issueToken(
        lookup: (String) -> AssertionHeaders.Lookup, method: String, target: String, body: some Sequence<UInt8>,
        client: String
    ) async throws(FlowError) -> TokenResponse {
        try await perform { () async throws(FlowError) in
            guard let tokens else { throw FlowError.tokensNotConfigured }
            let start = ContinuousClock.now
            let issued: TokenService.Issued
            if !AssertionHeaders.presented(lookup: lookup),
                let debugToken = try lookup(AttestKitHeaderNames.debugToken).single()
            {
                issued = try await measured("debug_token", since: start) { () async throws(FlowError) in
                    try tokens.issue(debugToken: debugToken, appIDs: configuration.appIDs)
                }
            } else if !AssertionHeaders.presented(lookup: lookup),
                let deviceToken = try lookup(AttestKitHeaderNames.deviceToken).single()
            {
                issued = try await measured("device_token", since: start) { () async throws(FlowError) in
                    // Counted as the guarded routes count theirs: each validation, and the per-client budget's 429.
                    do throws(FlowError) {
                        return try await tokens.issue(
                            deviceToken: deviceToken, client: client, appIDs: configuration.appIDs,
                            environment: apple?.deviceCheckEnvironment ?? .production
                        ) { valid, cached in metrics.deviceTokenValidation(valid: valid, cached: cached) }
                    } catch  where error.code == .rateLimited {
                        metrics.rateLimited(DeviceTokenValidator.budgetName)
                        throw error
                    }
                }
            } else {
                let headers = try AssertionHeaders(lookup: lookup)
                let binding = try AssertionBinding(
                    method: method, target: target, body: body, freshness: headers.freshness)
                let accepted = try await measured("assertion", since: start) { () async throws(FlowError) in
                    try await gate.verify(keyID: headers.keyID, assertion: headers.assertion, binding: binding)
                }
                issued = try tokens.issue(for: accepted)
                if accepted.validationCategoryChanged { metrics.validationCategoryChangeStepUp("token") }
            }
            metrics.tokenIssued(trust: issued.claims.trust)
            return TokenResponse(token: issued.token, expiresAt: APITime.format(issued.expiresAt))
        }
    }

    /// `POST /v1/tokens/consume` (backend): the claims of a valid token the first time, 409 `token_consumed` after.
    /// - Throws: 503 `tokens_not_configured`; the token service's codes.
    public func consumeToken(_ request: TokenConsumeRequest) async throws(FlowError) -> TokenClaims {
        try await perform { () async throws(FlowError) in
            guard let tokens else { throw FlowError.tokensNotConfigured }
            return try await tokens.consume(request.token)
        }
    }

    /// `POST /v1/tokens/introspect` (backend): RFC 7662 introspection of a session token, or with `tokenTypeHint`
    /// `app_key_certificate` of an app key certificate (its Base64 DER), that never consumes anything: `active:
    /// false` for anything not alive now (a revoked key's, expired, malformed, unknown).
    /// - Throws: 400 `invalid_field` for an unknown hint; 503 `tokens_not_configured` for a session token without a
    ///   signing key, `storage_unavailable` when the store cannot answer.
    public func introspectToken(
        _ request: TokenIntrospectionRequest
    ) async throws(FlowError) -> TokenIntrospectionResponse {
        try await perform { () async throws(FlowError) in
            switch request.tokenTypeHint {
            case nil, TokenIntrospectionRequest.sessionToken:
                guard let tokens else { throw FlowError.tokensNotConfigured }
                return try await tokens.introspect(request.token)
            case TokenIntrospectionRequest.appKeyCertificate:
                guard let der = Base64.decode(request.token) else { return .inactive }
                return try await keyAttestation.introspect(certificate: der, now: now())
            default:
                throw FlowError.invalidField("tokenTypeHint", "is session_token or app_key_certificate")
            }
        }
    }

    /// `GET /.well-known/jwks.json` (anyone): the keys that verify session tokens.
    /// - Throws: 503 `tokens_not_configured` without a signing key.
    public func tokenKeys() throws(FlowError) -> JSONWebKeySet {
        guard let tokens else { throw FlowError.tokensNotConfigured }
        return tokens.keySet
    }

    /// Runs `body`, counting it as one verification of `kind` with its outcome.
    private func measured<T>(
        _ kind: String, since start: ContinuousClock.Instant, _ body: () async throws(FlowError) -> T
    ) async throws(FlowError) -> T {
        do {
            let value = try await body()
            metrics.verification(kind, code: nil, duration: ContinuousClock.now - start)
            return value
        } catch {
            metrics.verification(kind, code: error.code.rawValue, duration: ContinuousClock.now - start)
            throw error
        }
    }
}
