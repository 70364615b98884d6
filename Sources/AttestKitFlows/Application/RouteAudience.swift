/// Who may call a route: every route has exactly one audience, checked before its handler runs, so a refused
/// request reads no body and changes no state.
///
/// | Audience | Routes | Credential |
/// |---|---|---|
/// | ``app`` | challenges, attestations, session tokens | none: the attestation or assertion is the proof; rate limits |
/// | ``backend`` | assertion and request checks, token consumption, DeviceCheck | `Authorization: Bearer` one of `backend.tokens` |
/// | ``operator`` | key records, revocation, unban | `Authorization: Bearer` the `admin.token` |
/// | ``monitoring`` | `/metrics` | a backend token or the admin token |
/// | ``dashboard`` | `GET /dashboard`, `POST /dashboard/logout` | `Authorization: Bearer` the `admin.token`, or a live dashboard session cookie |
/// | ``dashboardLogin`` | `GET`, `POST /dashboard/login` | none; the login checks the admin token, rate limited |
/// | ``probe`` | `/health`, `/ready` | none |
/// | ``anyone`` | `/.well-known/jwks.json` | none: public keys |
///
/// Wherever the admin token is taken, so is each of `admin.previous-tokens` (a rotation under way). The admin
/// tokens and the backend tokens are separate scopes: an admin token opens no backend route and a backend token opens
/// no operator route. ``AttestKitApplication/authorize(_:authorization:session:client:)`` checks them.
public enum RouteAudience: String, Sendable, Hashable, CaseIterable {
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
    public var servedOnBackendListener: Bool { self != .app }
    /// Whether the route is served on the public listener when a backend listener is configured.
    public var servedOnPublicListener: Bool { self == .app || self == .probe || self == .anyone }
    /// Whether the audience presents a credential (a bearer token, or a dashboard session).
    public var needsCredential: Bool {
        switch self {
        case .backend, .operator, .monitoring, .dashboard: true
        case .app, .probe, .anyone, .dashboardLogin: false
        }
    }
}
