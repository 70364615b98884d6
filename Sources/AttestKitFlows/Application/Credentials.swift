import AttestKit

/// The bearer tokens of the backend and operator scopes, compared in constant time.
struct Credentials: Sendable {
    /// The backend tokens (several at once for rotation); empty when backend routes are off.
    let backendTokens: [[UInt8]]
    /// The admin token, or `nil` when operator routes are off. A dashboard session is bound to the admin token that
    /// opened it (this one or a previous one).
    let adminToken: [UInt8]?
    /// The admin tokens still accepted while a rotation reaches every replica and client (`admin.previous-tokens`);
    /// empty without an ``adminToken`` (none of them opens anything then).
    let adminPreviousTokens: [[UInt8]]

    /// Credentials of the configured tokens.
    init(backendTokens: [String], adminToken: String?, adminPreviousTokens: [String] = []) {
        self.backendTokens = backendTokens.map { Array($0.utf8) }
        self.adminToken = adminToken.map { Array($0.utf8) }
        self.adminPreviousTokens = adminToken == nil ? [] : adminPreviousTokens.map { Array($0.utf8) }
    }

    /// Checks the `Authorization` values of a request for `audience`; `session` is whether a live dashboard
    /// session cookie came with it (`nil`: none came).
    /// - Throws: 401 `backend_unauthorized` / `admin_unauthorized` / `monitoring_unauthorized` for a missing or wrong
    ///   credential, 503 `backend_not_configured` / `admin_not_configured` / `monitoring_not_configured` when the
    ///   deployment set none.
    func check(_ audience: RouteAudience, authorization: [String], session: Bool?) throws(FlowError) {
        switch audience {
        case .app, .probe, .anyone, .dashboardLogin:
            return
        case .dashboard:
            guard adminToken != nil else { throw .adminNotConfigured }
            if isAdmin(authorization) || session == true { return }
            throw .adminUnauthorized
        case .backend:
            guard !backendTokens.isEmpty else { throw .backendNotConfigured }
            guard isBackend(authorization) else { throw .backendUnauthorized }
        case .operator:
            guard adminToken != nil else { throw .adminNotConfigured }
            guard isAdmin(authorization) else { throw .adminUnauthorized }
        case .monitoring:
            guard !backendTokens.isEmpty || adminToken != nil else { throw .monitoringNotConfigured }
            // Both scopes are compared, whichever matched, so the time taken does not tell which scope did.
            let backend = isBackend(authorization)
            let admin = isAdmin(authorization)
            guard backend || admin else { throw .monitoringUnauthorized }
        }
    }

    /// Whether the request presents one of the backend tokens. Every token is compared, whatever matched, so the
    /// time taken does not tell which one did.
    func isBackend(_ authorization: [String]) -> Bool {
        guard let presented = Self.bearer(authorization) else { return false }
        var matched = false
        for token in backendTokens where ConstantTime.equal(presented, token) { matched = true }
        return matched
    }

    /// Whether the request presents the admin token or one of the previous admin tokens (`false` when no admin token
    /// is configured).
    func isAdmin(_ authorization: [String]) -> Bool {
        guard let presented = Self.bearer(authorization) else { return false }
        return isAdmin(token: presented)
    }

    /// Whether `presented` is the admin token or one of the previous admin tokens (`false` when no admin token is
    /// configured). Every one is compared, whatever matched, so the time taken does not tell which one did (nor
    /// whether a token is the current or a previous one).
    func isAdmin(token presented: [UInt8]) -> Bool {
        guard let adminToken else { return false }
        var matched = ConstantTime.equal(presented, adminToken)
        for token in adminPreviousTokens where ConstantTime.equal(presented, token) { matched = true }
        return matched
    }

    /// The credential of `Authorization: Bearer <credential>` (scheme case-insensitive), or `nil`. A repeated
    /// Authorization header presents nothing.
    static func bearer(_ authorization: [String]) -> [UInt8]? {
        guard authorization.count == 1, let value = authorization.first else { return nil }
        let prefix = "bearer "
        guard value.utf8.count > prefix.utf8.count, value.prefix(prefix.count).lowercased() == prefix else {
            return nil
        }
        return Array(value.utf8.dropFirst(prefix.utf8.count))
    }
}

extension FlowError {
    /// 503 `backend_not_configured`: no backend token is configured.
    public static var backendNotConfigured: FlowError {
        FlowError(
            .init("backend_not_configured"), .notConfigured,
            "no backend token is configured (backend.tokens); backend routes are off")
    }
    /// 401 `backend_unauthorized`.
    public static var backendUnauthorized: FlowError {
        FlowError(.init("backend_unauthorized"), .unauthenticated, "a valid backend bearer token is required")
    }
    /// 503 `admin_not_configured`: no admin token is configured.
    public static var adminNotConfigured: FlowError {
        FlowError(.init("admin_not_configured"), .notConfigured, "no admin token is configured (admin.token)")
    }
    /// 401 `admin_unauthorized`.
    public static var adminUnauthorized: FlowError {
        FlowError(.init("admin_unauthorized"), .unauthenticated, "a valid admin bearer token is required")
    }
    /// 503 `monitoring_not_configured`: neither a backend token nor the admin token is configured.
    public static var monitoringNotConfigured: FlowError {
        FlowError(
            .init("monitoring_not_configured"), .notConfigured,
            "metrics need a backend token (backend.tokens) or the admin token (admin.token)")
    }
    /// The `WWW-Authenticate` challenge an edge sends with a refusal for want of a credential (a 401 carries one,
    /// RFC 9110): `Bearer realm="attestkit"` for the backend, operator and monitoring credentials (`code`
    /// `backend_unauthorized`, `admin_unauthorized`, `monitoring_unauthorized`); `nil` for any other code.
    public static func authenticationChallenge(forCode code: String) -> String? {
        ["backend_unauthorized", "admin_unauthorized", "monitoring_unauthorized"].contains(code)
            ? #"Bearer realm="attestkit""# : nil
    }

    /// 401 `monitoring_unauthorized`.
    public static var monitoringUnauthorized: FlowError {
        FlowError(
            .init("monitoring_unauthorized"), .unauthenticated, "a valid backend or admin bearer token is required")
    }
}

extension Credentials: CustomStringConvertible, CustomReflectable {
    /// Which credentials are set; never one.
    var description: String {
        "Credentials(backend: \(backendTokens.count), admin: \(adminToken == nil ? "off" : "on"), previous admin: "
            + "\(adminPreviousTokens.count))"
    }

    /// No children: the tokens are secrets.
    var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
