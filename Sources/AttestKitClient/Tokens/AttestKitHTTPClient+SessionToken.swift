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
        try await sessionToken(replacing: nil).token
    }

    /// Forgets the cached session token: the next ``sessionToken()`` asks the service.
    ///
    /// A request for a token under way when this is called (asked for before it) is not waited for: the callers
    /// already waiting for it still get its token, but it is not cached, and a call made after this asks the
    /// service anew (a sign-out or an account switch is not undone by a token requested before it).
    public func invalidateSessionToken() async {
        await sessionTokens.invalidate()
    }

    /// Sends `request` to one of the app's backends with `Authorization: Bearer <session token>`.
    ///
    /// When the backend answers 401 (the token expired or is invalid there) or 409 with the error code
    /// `token_consumed` (a limited-use token consumed already, as `POST /v1/tokens/consume` answers it), the client
    /// gets a new token and sends the request once more. When it answers 403 `key_not_found`, `key_expired` or
    /// `key_revoked` (the service's refusal of the key the token names, as `POST /v1/tokens/consume` answers it: the
    /// operator deleted or revoked the key, or it went unused for too long), the token is dropped and the manager
    /// handles the refusal as for an assertion of that key: a key deleted or expired (or revoked, with
    /// ``AppAttestManager/Configuration/reattestAfterRevocation``) is replaced, and the request sent once more with
    /// a token of the new key; a key revoked otherwise is reported as ``AttestKitClientError/Code/keyRevoked``. The
    /// request is sent again at most once: a second refusal is thrown (a second key refused is noted all the same,
    /// so that the next call starts with a new key). Another 409 is the backend's own conflict (an order that
    /// exists, say) and is thrown at once: the request is not sent again; so is any other 403.
    /// - Returns: The body and the response of a 2xx answer.
    /// - Throws: ``AttestKitClientError``, as ``sessionToken()`` and ``data(for:)``.
    public func data(withSessionToken request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        var entry = try await sessionToken(replacing: nil)
        var refreshed = false
        while true {
            var authorized = request
            authorized.setValue("Bearer " + entry.token.token, forHTTPHeaderField: "Authorization")
            do {
                return try await send(authorized, over: transport)
            } catch let error as AttestKitClientError where error.code == .httpError {
                guard try await renews(entry, refusedWith: error), !refreshed else { throw error }
                refreshed = true
                entry = try await sessionToken(replacing: entry.token)
            }
        }
    }

    /// Whether a backend's refusal of the token of `entry` calls for a new token: 401, 409 `token_consumed`, or the
    /// service's refusal of the token's key, which the manager notes first, as for an assertion's refusal
    /// (``AppAttestManager/keyRefused(_:refusal:)``), and after which the token is dropped.
    /// - Throws: ``AttestKitClientError/Code/keyRevoked`` for a key revoked that the manager does not replace.
    private func renews(_ entry: SessionTokenCache.Entry, refusedWith refused: AttestKitClientError) async throws
        -> Bool
    {
        if refused.status == 401 || (refused.status == 409 && refused.serviceCode == "token_consumed") { return true }
        guard let manager, let keyID = entry.keyID, let refusal = refused.verificationRefusal,
            Self.keyRefusalsOfTokens.contains(refusal)
        else { return false }
        let decision = await manager.keyRefused(keyID, refusal: refusal)
        await sessionTokens.drop(entry.token)
        switch decision {
        case .done: return false
        case .resend: return true
        case .revoked: throw Self.keyRevoked(refused)
        }
    }

    /// The service's refusals of a token's key that `POST /v1/tokens/consume` answers (it looks at the key first):
    /// the key deleted, revoked, or unused for longer than `keys.expire-after`.
    private static let keyRefusalsOfTokens: Set<AttestKitClientError.VerificationRefusal> = [
        .keyNotFound, .keyExpired, .keyRevoked,
    ]

    private func sessionToken(replacing refused: SessionToken?) async throws -> SessionTokenCache.Entry {
        try await sessionTokens.token(now: now(), margin: tokenRefreshMargin, refused: refused) { [self] in
            try await fetchSessionToken()
        }
    }

    /// `POST /v1/tokens` with an assertion over that request (or the debug token, where it is sent).
    private func fetchSessionToken() async throws -> SessionTokenCache.Entry {
        guard let manager else {
            throw AttestKitClientError(
                .unsupported, reason: "session tokens need App Attest: the client has no manager")
        }
        let service = manager.service
        var request = URLRequest(
            url: service.baseURL.appendingPathComponent("v1/tokens"), timeoutInterval: service.timeout)
        request.httpMethod = "POST"
        request.httpBody = Data()
        let (data, response, keyID) = try await sendAsserted(request, manager, over: service.transport)
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
        let token = SessionToken(token: answer.token, expiresAt: deviceExpiry)
        return SessionTokenCache.Entry(token: token, keyID: keyID)
    }
}
