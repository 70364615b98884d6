public import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
public import Vapor

/// The routes of `attestkit serve`, to mount on a Vapor application: registered from the flows' one table
/// (`AttestKitRoute.all`, from which the Hummingbird service registers too), with the same paths, JSON messages,
/// statuses, error envelope and `Retry-After`:
///
/// - app: `POST /v1/challenges`, `POST /v1/attestations`, `POST /v1/key-attestations`, `POST /v1/tokens`;
/// - backend (`Authorization: Bearer` a backend token): `POST /v1/assertions/verify`, `POST /v1/requests/verify`,
///   `POST /v1/devicecheck/query|update|validate`, `POST /v1/tokens/consume|introspect`;
/// - operator (the admin token): `GET /v1/keys/{keyId}`, `POST /v1/keys/{keyId}/revoke`,
///   `DELETE /v1/keys/{keyId}`, `POST /v1/devicecheck/unban`;
/// - monitoring (a backend token or the admin token): `GET /metrics`;
/// - probes: `GET /health`, `GET /ready`; anyone: `GET /.well-known/jwks.json`;
/// - the operator dashboard (the admin token or a session cookie): `GET /dashboard`, `POST /dashboard/logout`; its
///   login (anyone, rate limited): `GET /dashboard/login`, `POST /dashboard/login`.
///
/// Each route checks its audience's credential first (`AttestKitApplication.authorize(_:authorization:session:client:)`:
/// a wrong one spends the client's failure budget), before it reads the body, then calls the application's use case
/// under one storage deadline; an error becomes the AttestKit envelope once (``AttestKitAbort``). The per-address
/// budgets count the client of ``AttestKitIntegration/client(of:)``. The operator dashboard answers as the
/// service's (the flows' one `Dashboard`): a browser without a session is redirected to the login form, relative to
/// where the routes are mounted; its page reads the metrics of ``AttestKitIntegration/exposition`` and answers 503
/// `metrics_not_configured` without a registry.
///
/// ```swift
/// try app.register(collection: AttestKitRoutes())                       // every route
/// try app.register(collection: AttestKitRoutes(audiences: [.app, .probe, .anyone]))  // the public ones
/// ```
public struct AttestKitRoutes: RouteCollection {
    /// The audiences whose routes are mounted.
    public let audiences: Set<RouteAudience>

    /// Creates the collection of the routes of `audiences` (all by default); they use the application configured
    /// on `app.attestKit`.
    public init(audiences: Set<RouteAudience> = Set(RouteAudience.allCases)) {
        self.audiences = audiences
    }

    /// The routes mounted: those of the table for ``audiences``.
    public var routes: [AttestKitRoute] {
        AttestKitRoute.all.filter { audiences.contains($0.audience) }
    }

    /// Mounts ``routes`` on `builder`, paths relative to it.
    public func boot(routes builder: any RoutesBuilder) throws {
        for route in routes {
            let path: [PathComponent] = route.path.split(separator: "/").map { segment in
                segment.hasPrefix("{") && segment.hasSuffix("}")
                    ? .parameter(String(segment.dropFirst().dropLast())) : .constant(String(segment))
            }
            let loginForm = Dashboard.relativeReference(to: "/dashboard/login", from: route.path)
            let registered = builder.on(HTTPMethod(rawValue: route.method), path, body: .stream) { request in
                await Self.respond(route, request, loginForm: loginForm)
            }
            registered.userInfo[Self.audienceKey] = route.audience.rawValue
        }
    }

    /// The key of `Route.userInfo` holding the audience of a mounted route (its raw value).
    public static let audienceKey = "attestkit.audience"

    /// Checks the audience's credential (a browser without a dashboard session is sent to `loginForm`), then answers
    /// with the use case; any error becomes the envelope.
    static func respond(_ route: AttestKitRoute, _ request: Request, loginForm: String) async -> Response {
        do {
            guard let integration = request.application.attestKit else { throw FlowError.notConfiguredVapor }
            if let redirect = Dashboard.ownSpelling(
                method: route.method, routePath: route.path, requestPath: request.url.path)
            {
                return AttestKitHandlers.response(redirect)
            }
            // The request's store calls (a dashboard session's lookup among them) share one deadline.
            return try await StoreRequestDeadline.withRequest {
                if let redirect = try await integration.dashboard.authorize(
                    route.audience, authorization: request.headers[.authorization], cookies: request.headers[.cookie],
                    accept: request.headers[.accept], client: integration.client(of: request), loginForm: loginForm)
                {
                    return AttestKitHandlers.response(redirect)
                }
                return try await AttestKitHandlers(integration: integration, request: request).respond(route)
            }
        } catch {
            return AttestKitAbort.response(to: error, logger: request.logger)
        }
    }
}
