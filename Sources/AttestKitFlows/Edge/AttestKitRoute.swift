/// One route of the HTTP API: its method, its path (parameters as `{name}`), who may call it and the use case of
/// ``AttestKitApplication`` it calls. ``all`` is the one table both edges register their routes from (the
/// Hummingbird service and `AttestKitRoutes`, the Vapor route collection), so that they serve the same
/// routes to the same audiences; docs/openapi.yaml lists the same.
public struct AttestKitRoute: Sendable, Hashable, CustomStringConvertible {
    /// The use case a route calls: what an edge dispatches on.
    public enum UseCase: String, Sendable, Hashable, CaseIterable {
        /// `POST /v1/challenges`: ``AttestKitApplication/issueChallenge(_:client:)``.
        case issueChallenge
        /// `POST /v1/attestations`: ``AttestKitApplication/registerAttestation(_:client:)``.
        case registerAttestation
        /// `POST /v1/key-attestations`: ``AttestKitApplication/registerKeyAttestation(_:client:)``.
        case registerKeyAttestation
        /// `POST /v1/assertions/verify`: ``AttestKitApplication/verifyAssertion(_:)``.
        case verifyAssertion
        /// `POST /v1/requests/verify`: ``AttestKitApplication/verifyRequest(_:)``.
        case verifyRequest
        /// `POST /v1/devicecheck/query`: ``AttestKitApplication/deviceCheckQuery(_:)``.
        case deviceCheckQuery
        /// `POST /v1/devicecheck/update`: ``AttestKitApplication/deviceCheckUpdate(_:mayUnban:)``, never out of
        /// `banned`.
        case deviceCheckUpdate
        /// `POST /v1/devicecheck/validate`: ``AttestKitApplication/deviceCheckValidate(_:)``.
        case deviceCheckValidate
        /// `POST /v1/tokens`: ``AttestKitApplication/issueToken(lookup:method:target:body:client:)``.
        case issueToken
        /// `POST /v1/tokens/consume`: ``AttestKitApplication/consumeToken(_:)``.
        case consumeToken
        /// `POST /v1/tokens/introspect`: ``AttestKitApplication/introspectToken(_:)``.
        case introspectToken
        /// `GET /.well-known/jwks.json`: ``AttestKitApplication/tokenKeys()``.
        case tokenKeys
        /// `GET /v1/keys/{keyId}`: ``AttestKitApplication/keyReport(keyID:)``.
        case keyReport
        /// `POST /v1/keys/{keyId}/revoke`: ``AttestKitApplication/revokeKey(keyID:)``.
        case revokeKey
        /// `DELETE /v1/keys/{keyId}`: ``AttestKitApplication/deleteKey(keyID:)``.
        case deleteKey
        /// `POST /v1/devicecheck/unban`: ``AttestKitApplication/deviceCheckUpdate(_:mayUnban:)``, also out of
        /// `banned`.
        case deviceCheckUnban
        /// `GET /health`: 200 while the process runs.
        case health
        /// `GET /ready`: ``AttestKitApplication/ready()``.
        case ready
        /// `GET /metrics`: the Prometheus exposition, after ``AttestKitApplication/refreshGauges()``.
        case metrics
        /// `GET /dashboard`: the operator dashboard (HTML).
        case dashboard
        /// `GET /dashboard/login`: the login form (HTML).
        case dashboardLoginForm
        /// `POST /dashboard/login`: the login (HTML).
        case dashboardLogin
        /// `POST /dashboard/logout`: the logout (HTML).
        case dashboardLogout
    }

    /// `GET` or `POST`.
    public let method: String
    /// The path from the root where the routes are mounted, parameters as `{name}` (`/v1/keys/{keyId}`).
    public let path: String
    /// Who may call it, checked before its handler reads anything.
    public let audience: RouteAudience
    /// The use case it calls.
    public let useCase: UseCase

    /// Whether it is one of the operator dashboard's HTML pages (`/dashboard`, its login and logout), which every edge
    /// serves through the flows' one `Dashboard` (its sessions, page and login budget) rather than the application's
    /// JSON dispatch.
    public var isDashboard: Bool { audience == .dashboard || audience == .dashboardLogin }

    /// `METHOD /path`.
    public var description: String { "\(method) \(path)" }

    init(_ method: String, _ path: String, _ audience: RouteAudience, _ useCase: UseCase) {
        self.method = method
        self.path = path
        self.audience = audience
        self.useCase = useCase
    }

    /// Every route of the API, in registration order.
    public static let all: [AttestKitRoute] = [
        AttestKitRoute("POST", "/v1/challenges", .app, .issueChallenge),
        AttestKitRoute("POST", "/v1/attestations", .app, .registerAttestation),
        AttestKitRoute("POST", "/v1/key-attestations", .app, .registerKeyAttestation),
        AttestKitRoute("POST", "/v1/assertions/verify", .backend, .verifyAssertion),
        AttestKitRoute("POST", "/v1/requests/verify", .backend, .verifyRequest),
        AttestKitRoute("POST", "/v1/devicecheck/query", .backend, .deviceCheckQuery),
        AttestKitRoute("POST", "/v1/devicecheck/update", .backend, .deviceCheckUpdate),
        AttestKitRoute("POST", "/v1/devicecheck/validate", .backend, .deviceCheckValidate),
        AttestKitRoute("POST", "/v1/tokens", .app, .issueToken),
        AttestKitRoute("POST", "/v1/tokens/consume", .backend, .consumeToken),
        AttestKitRoute("POST", "/v1/tokens/introspect", .backend, .introspectToken),
        AttestKitRoute("GET", "/.well-known/jwks.json", .anyone, .tokenKeys),
        AttestKitRoute("GET", "/v1/keys/{keyId}", .operator, .keyReport),
        AttestKitRoute("POST", "/v1/keys/{keyId}/revoke", .operator, .revokeKey),
        AttestKitRoute("DELETE", "/v1/keys/{keyId}", .operator, .deleteKey),
        AttestKitRoute("POST", "/v1/devicecheck/unban", .operator, .deviceCheckUnban),
        AttestKitRoute("GET", "/health", .probe, .health),
        AttestKitRoute("GET", "/ready", .probe, .ready),
        AttestKitRoute("GET", "/metrics", .monitoring, .metrics),
        AttestKitRoute("GET", "/dashboard", .dashboard, .dashboard),
        AttestKitRoute("GET", "/dashboard/login", .dashboardLogin, .dashboardLoginForm),
        AttestKitRoute("POST", "/dashboard/login", .dashboardLogin, .dashboardLogin),
        AttestKitRoute("POST", "/dashboard/logout", .dashboard, .dashboardLogout),
    ]
}
