import AttestKitWire
public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension AttestKitHTTPClient {
    /// A session token of the AttestKit service for this app's key (`POST /v1/tokens`), for the app's backends
    /// that verify tokens with the service's JWKS rather than assertions.
    ///
    /// The token is cached until ``tokenRefreshMargin`` before it expires; then the next call asks the service
    /// with an assertion over that very request (its refusals handled as for any request: a key replaced, a
    /// request overtaken sent again, service challenges after a clock skew). Concurrent callers share one
    /// request. The token is never logged by the client.
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/httpError`` with status 503 and service
    ///   code `tokens_not_configured` when the service has no signing key; ``AttestKitClientError/Code/invalidResponse``
    ///   for an answer that is not a token or expired already; ``AttestKitClientError/Code/unsupported`` without an
    ///   ``AppAttestManager``; ``AttestKitClientError/Code/unavailable``,
    ///   ``AttestKitClientError/Code/attestationDeferred`` (the service's ramp) or
    ///   ``AttestKitClientError/Code/keyRevoked`` when App Attest cannot sign now.
    public func sessionToken() async throws -> SessionToken {
        try await sessionToken(replacing: nil)
    }

    /// Forgets the cached session token: the next ``sessionToken()`` asks the service.
    public func invalidateSessionToken() async {
        await sessionTokens.invalidate()
    }

    /// Sends `request` to one of the app's backends with `Authorization: Bearer <session token>`.
    ///
    /// When the backend answers 401 (the token expired or is invalid there) or 409 with the error code
    /// `token_consumed` (a limited-use token consumed already, as `POST /v1/tokens/consume` answers it), the client
    /// gets a new token and sends the request once more; a second refusal is thrown. Another 409 is the backend's
    /// own conflict (an order that exists, say) and is thrown at once: the request is not sent again.
    /// - Returns: The body and the response of a 2xx answer.
    /// - Throws: ``AttestKitClientError``, as ``sessionToken()`` and ``data(for:)``.
    public func data(withSessionToken request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        var token = try await sessionToken()
        var refreshed = false
        while true {
            var authorized = request
            authorized.setValue("Bearer " + token.token, forHTTPHeaderField: "Authorization")
            do {
                return try await send(authorized, over: transport)
            } catch let error as AttestKitClientError
                where !refreshed && error.code == .httpError
                && (error.status == 401 || (error.status == 409 && error.serviceCode == "token_consumed"))
            {
                refreshed = true
                token = try await sessionToken(replacing: token)
            }
        }
    }

    private func sessionToken(replacing refused: SessionToken?) async throws -> SessionToken {
        try await sessionTokens.token(now: now(), margin: tokenRefreshMargin, refused: refused) { [self] in
            try await fetchSessionToken()
        }
    }

    /// `POST /v1/tokens` with an assertion over that request (or the debug token, where it is sent).
    private func fetchSessionToken() async throws -> SessionToken {
        guard let manager else {
            throw AttestKitClientError(
                .unsupported, reason: "session tokens need App Attest: the client has no manager")
        }
        let service = manager.service
        var request = URLRequest(
            url: service.baseURL.appendingPathComponent("v1/tokens"), timeoutInterval: service.timeout)
        request.httpMethod = "POST"
        request.httpBody = Data()
        let (data, response) = try await sendWithAssertion(request, manager, over: service.transport)
        guard data.count <= AttestKitService.maximumAnswerSize,
            let answer = try? WireJSON.decode(TokenResponse.self, from: data)
        else {
            throw AttestKitClientError(.invalidResponse, reason: "the token answer is not a TokenResponse")
        }
        guard SessionToken.isCompactJWS(answer.token) else {
            throw AttestKitClientError(.invalidResponse, reason: "the token answer holds no compact JWS")
        }
        // Kept by the device's clock: a clock ahead would take every token for expired, one behind keep it too long.
        let arrival = now()
        guard let expiresAt = APITime.parse(answer.expiresAt),
            case let deviceExpiry = ServiceClock.deviceTime(of: expiresAt, answeredBy: response, arrival: arrival),
            deviceExpiry > arrival
        else {
            throw AttestKitClientError(.invalidResponse, reason: "the token answer has no future expiry")
        }
        return SessionToken(token: answer.token, expiresAt: deviceExpiry)
    }
}
