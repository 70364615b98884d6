import AttestKit
import Foundation
import HTTPTypes
import Hummingbird

/// Who may call a route: every route of the API has exactly one audience, checked before its handler runs, so a
/// refused request reads no body and changes no state.
///
/// | Audience | Routes | Credential |
/// |---|---|---|
/// | ``app`` | challenges, attestations, session tokens | none: the attestation or assertion is the proof; rate limits |
/// | ``backend`` | assertion checks, token consumption, DeviceCheck | `Authorization: Bearer` one of `backend.tokens` |
/// | ``operator`` | key records, revocation | `Authorization: Bearer` the `admin.token` |
/// | ``monitoring`` | `/metrics` | a backend token or the admin token |
/// | ``dashboard`` | `GET /dashboard`, `POST /dashboard/logout` | `Authorization: Bearer` the `admin.token`, or a live dashboard session cookie |
/// | ``dashboardLogin`` | `GET`, `POST /dashboard/login` | none; the login checks the admin token, rate limited |
/// | ``probe`` | `/health`, `/ready` | none |
/// | ``anyone`` | `/.well-known/jwks.json` | none: public keys |
///
/// The admin token and the backend tokens are separate scopes: the admin token opens no backend route and a backend
/// token opens no operator route.
enum RouteAudience: String, Sendable, Hashable, CaseIterable {
    /// The app on a user's device: hostile, reaches the public listener.
    case app
    /// The operator's own servers.
    case backend
    /// The operator (people and their tools).
    case `operator`
    /// A metrics scraper: the backend or the operator.
    case monitoring
    /// Load balancers and orchestrators: liveness and readiness, nothing else.
    case probe
    /// The operator's browser (or tools): the admin token, or a session opened by logging in with it.
    case dashboard
    /// The dashboard's login form: anyone who reaches the listener; the login checks the admin token itself.
    case dashboardLogin
    /// Anyone: public information (the keys that verify session tokens), nothing else.
    case anyone

    /// Whether the route is served on the backend listener when one is configured (`http.backend-port`): backend,
    /// operator and monitoring routes move there, off the public interface; probes and public keys answer on both.
    var servedOnBackendListener: Bool { self != .app }
    /// Whether the route is served on the public listener when a backend listener is configured.
    var servedOnPublicListener: Bool { self == .app || self == .probe || self == .anyone }

    /// Checks the request's credential for this audience.
    /// - Throws: 401 `backend_unauthorized` / `admin_unauthorized` for a missing or wrong credential, 503
    ///   `backend_not_configured` / `admin_not_configured` when the deployment set none.
    func authorize(_ request: Request, credentials: Credentials) throws(APIError) {
        switch self {
        case .app, .probe, .anyone, .dashboardLogin:
            return
        case .dashboard:
            guard let admin = credentials.adminToken else { throw Credentials.adminNotConfigured }
            if Credentials.matches(request.headers, admin) { return }
            guard let cookie = DashboardSessions.cookie(in: request.headers[values: .cookie]),
                credentials.sessions.isValid(cookie, now: credentials.now())
            else { throw Credentials.adminUnauthorized }
        case .backend:
            guard !credentials.backendTokens.isEmpty else { throw Credentials.backendNotConfigured }
            guard credentials.isBackend(request.headers) else { throw Credentials.backendUnauthorized }
        case .operator:
            guard let admin = credentials.adminToken else { throw Credentials.adminNotConfigured }
            guard Credentials.matches(request.headers, admin) else { throw Credentials.adminUnauthorized }
        case .monitoring:
            guard !credentials.backendTokens.isEmpty || credentials.adminToken != nil else {
                throw APIError(
                    .serviceUnavailable, "monitoring_not_configured",
                    "metrics need a backend token (backend.tokens) or the admin token (admin.token)")
            }
            let admitted =
                credentials.isBackend(request.headers)
                || credentials.adminToken.map { Credentials.matches(request.headers, $0) } == true
            guard admitted else {
                throw APIError(
                    .unauthorized, "monitoring_unauthorized", "a valid backend or admin bearer token is required")
            }
        }
    }
}

/// The bearer tokens of the backend and operator scopes, compared in constant time.
struct Credentials: Sendable {
    /// The backend tokens (several at once for rotation); empty when backend routes are off.
    let backendTokens: [[UInt8]]
    /// The admin token, or `nil` when operator routes are off.
    let adminToken: [UInt8]?
    /// The dashboard's browser sessions, opened by logging in with the admin token.
    let sessions: DashboardSessions
    /// The clock sessions expire by.
    let now: @Sendable () -> Date

    /// Credentials; the dashboard's sessions live `sessionLifetime` seconds, bound to the admin token.
    init(
        backendTokens: [String], adminToken: String?, sessionLifetime: TimeInterval = 3_600,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.backendTokens = backendTokens.map { Array($0.utf8) }
        let adminToken = adminToken.map { Array($0.utf8) }
        self.adminToken = adminToken
        self.sessions = DashboardSessions(lifetime: sessionLifetime, adminToken: adminToken ?? [])
        self.now = now
    }

    /// Whether the request presents a credential for `audience`: an `Authorization` header, or for the dashboard a
    /// session cookie. Audiences without a credential present none.
    func presentsCredential(_ headers: HTTPFields, for audience: RouteAudience) -> Bool {
        switch audience {
        case .app, .probe, .anyone, .dashboardLogin: false
        case .backend, .operator, .monitoring: headers[.authorization] != nil
        case .dashboard: headers[.authorization] != nil || DashboardSessions.cookie(in: headers[values: .cookie]) != nil
        }
    }

    /// Whether the request presents one of the backend tokens. Every token is compared, whatever matched, so the
    /// time taken does not tell which one did.
    func isBackend(_ headers: HTTPFields) -> Bool {
        guard let presented = Self.bearer(headers) else { return false }
        var matched = false
        for token in backendTokens where ConstantTime.equal(presented, token) { matched = true }
        return matched
    }

    /// Whether the request presents `token`.
    static func matches(_ headers: HTTPFields, _ token: [UInt8]) -> Bool {
        guard let presented = bearer(headers) else { return false }
        return ConstantTime.equal(presented, token)
    }

    /// The credential of `Authorization: Bearer <credential>` (scheme case-insensitive), or `nil`. A repeated
    /// Authorization header presents nothing.
    static func bearer(_ headers: HTTPFields) -> [UInt8]? {
        let values = headers[values: .authorization]
        guard values.count == 1, let value = values.first else { return nil }
        let prefix = "bearer "
        guard value.utf8.count > prefix.utf8.count, value.prefix(prefix.count).lowercased() == prefix else {
            return nil
        }
        return Array(value.utf8.dropFirst(prefix.utf8.count))
    }

    static let backendNotConfigured = APIError(
        .serviceUnavailable, "backend_not_configured",
        "no backend token is configured (backend.tokens); backend routes are off")
    static let backendUnauthorized = APIError(
        .unauthorized, "backend_unauthorized", "a valid backend bearer token is required")
    static let adminNotConfigured = APIError(
        .serviceUnavailable, "admin_not_configured", "no admin token is configured (admin.token)")
    static let adminUnauthorized = APIError(
        .unauthorized, "admin_unauthorized", "a valid admin bearer token is required")
}
