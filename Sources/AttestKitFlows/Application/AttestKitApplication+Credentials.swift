import AttestKit
import Logging

extension AttestKitApplication {
    /// Checks a request's credential for the audience of its route, before anything of the request is read.
    ///
    /// A wrong credential takes one failure from the client's budget (`rate-limit.auth-failures-per-ip`), is counted
    /// (`attestkit_auth_failures_total`) and logged with the client's address, never the credential. Once the
    /// budget is spent every credential of the client, right or wrong, is refused with 429, so that a right guess is
    /// not told from a wrong one; a right credential spends nothing (and, while nobody has failed, takes no lock). A
    /// request that presents none (no `Authorization`, no session cookie) guesses nothing and spends nothing.
    ///
    /// - Parameters:
    ///   - audience: The route's audience.
    ///   - authorization: The request's `Authorization` values (several: presents nothing valid).
    ///   - session: For the dashboard: whether the session cookie sent is live, `nil` when none was sent.
    ///   - client: The client's address as a rate-limit key, worked out only when a budget needs it.
    /// - Throws: 401 for a missing or wrong credential, 503 when the audience's credential is not configured, 429
    ///   `rate_limited` (`auth_failures_per_ip`) once the client's failures are spent.
    public func authorize(
        _ audience: RouteAudience, authorization: [String], session: Bool? = nil, client: @autoclosure () -> String
    ) throws(FlowError) {
        guard audience.needsCredential else { return }
        let presented = !authorization.isEmpty || (audience == .dashboard && session != nil)
        do {
            try credentials.check(audience, authorization: authorization, session: session)
        } catch {
            if presented, error.kind == .unauthenticated {
                try spendAuthFailure(client(), audience: audience.rawValue)
            }
            throw error
        }
        // A right credential spends nothing, but once the budget is spent it is refused like a wrong one (429), so
        // that a right guess is not told apart. Without the limiter's lock while nobody has failed.
        if presented, let wait = authFailuresPerClient.exhaustion(client(), now: now()) {
            throw refuseSpent(client(), audience: audience.rawValue, wait: wait)
        }
    }

    /// Takes one failure of `client`'s credential budget for a wrong credential presented to `audience` (a label:
    /// an audience, or `dashboard_login`), counting and logging it; throws 429 when the budget is spent.
    func spendAuthFailure(_ client: String, audience: String) throws(FlowError) {
        try reserveAuthFailure(client, audience: audience)
        authFailed(client, audience: audience)
    }

    /// Reserves one failure of `client`'s credential budget before a credential is checked (the dashboard's login
    /// form), or throws 429 when it is spent; ``refundAuthFailure(_:)`` gives it back when the credential is right.
    package func reserveAuthFailure(_ client: String, audience: String) throws(FlowError) {
        if let wait = authFailuresPerClient.acquire(client, now: now()) {
            throw refuseSpent(client, audience: audience, wait: wait)
        }
    }

    /// Gives back a failure ``reserveAuthFailure(_:audience:)`` took, for a right credential.
    package func refundAuthFailure(_ client: String) {
        authFailuresPerClient.refund(client, now: now())
    }

    /// Counts and logs a wrong credential of `client` (the failure it took stays spent).
    package func authFailed(_ client: String, audience: String) {
        metrics.authFailure(audience)
        logger.notice("credential refused", metadata: ["client": "\(client)", "audience": "\(audience)"])
    }

    /// Whether `token` is the admin token or one of the previous admin tokens (`admin.previous-tokens`: the
    /// dashboard's login form), compared in constant time against every one of them; `nil` when no admin token is
    /// configured.
    package func isAdminToken(_ token: String) -> Bool? {
        guard credentials.adminToken != nil else { return nil }
        return credentials.isAdmin(token: Array(token.utf8))
    }

    /// Counts and logs a spent credential budget, and returns its 429.
    private func refuseSpent(_ client: String, audience: String, wait: Int) -> FlowError {
        metrics.rateLimited("auth_failures_per_ip")
        logger.notice(
            "credential refused: failure budget spent", metadata: ["client": "\(client)", "audience": "\(audience)"])
        return FlowError.rateLimited("auth_failures_per_ip", retryAfter: wait)
    }
}
