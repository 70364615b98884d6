import AttestKit
import AttestKitApple
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1

/// The HTTP API's handlers: each decodes its request, calls the use case of the ``AttestKitApplication`` (the
/// decisions composed once, in the flows) and encodes its answer. Each group of routes lives in its own extension
/// file; what they share is the application, the dashboard's state and the client's address.
struct AttestKitAPI: Sendable {
    /// The decisions, composed once.
    let application: AttestKitApplication
    /// The service's settings (listeners, the dashboard, proxies).
    let configuration: ServerConfiguration
    /// The service's metrics: the application's, the HTTP edge's and the dashboard's, in one registry.
    let metrics: ServerMetrics
    /// The operator dashboard (its sessions, history and login budget), the Vapor edge's too.
    let dashboard: Dashboard
    /// Who sent a request, for rate limits (``ClientAddress``).
    let clientAddress: ClientAddress

    /// The handlers of `application`, with the service's own settings around it.
    init(application: AttestKitApplication, configuration: ServerConfiguration, metrics: ServerMetrics) {
        self.application = application
        self.configuration = configuration
        self.metrics = metrics
        self.dashboard = Dashboard(application: application, sessionLifetime: configuration.dashboardSessionLifetime)
        self.clientAddress = ClientAddress(
            trustedProxies: configuration.trustedProxies, header: configuration.clientAddressHeader,
            ipv6PrefixLength: application.configuration.rateLimits.ipv6PrefixLength)
    }

    /// The store the application shares.
    var store: any AttestationStore { application.store }
    /// The application's clock.
    var now: @Sendable () -> Date { application.now }

    /// One route of the flows' table (`AttestKitRoute`) with the handler it calls here.
    struct Endpoint: Sendable {
        let method: HTTPRequest.Method
        let path: String
        let audience: RouteAudience
        let handler: @Sendable (AttestKitAPI) -> @Sendable (Request, RouteContext) async throws -> Response
    }

    /// Every route of the API, in registration order: the flows' table (`AttestKitRoute.all`, which the Vapor edge
    /// registers from too), each with its handler. What ``register(on:for:)`` registers and ``routes`` lists.
    static let endpoints: [Endpoint] = AttestKitRoute.all.map { route in
        Endpoint(
            method: HTTPRequest.Method(route.method) ?? .get, path: route.path, audience: route.audience,
            handler: handler(of: route))
    }

    /// The handler of a route: the application's one dispatch (`AttestKitApplication.respond(to:_:body:)`), but for
    /// the service's own formats (the Prometheus exposition, the dashboard's pages).
    private static func handler(
        of route: AttestKitRoute
    ) -> @Sendable (AttestKitAPI) -> @Sendable (Request, RouteContext) async throws -> Response {
        switch route.useCase {
        case .metrics: { $0.metricsExposition }
        case .dashboard: { $0.dashboard }
        case .dashboardLoginForm: { $0.dashboardLoginForm }
        case .dashboardLogin: { $0.dashboardLogin }
        case .dashboardLogout: { $0.dashboardLogout }
        default: { api in { request, context in try await api.respond(route, request, context) } }
        }
    }

    /// Answers `route` with the application's dispatch: the request as sent (its target, a header lookup, the
    /// `{keyId}` parameter, the client's address worked out only if a use case budgets by it), the body collected up
    /// to the limit the use case gives (413 beyond).
    private func respond(_ route: AttestKitRoute, _ request: Request, _ context: RouteContext) async throws -> Response
    {
        var request = request
        let answer = try await application.respond(
            to: route, RouteRequest(request: request, context: context, clientAddress: clientAddress)
        ) { limit in
            Array(try await request.collectBody(upTo: limit).readableBytesView)
        }
        return JSONResponse.make(answer)
    }

    /// Every route as `METHOD /path`, derived from ``endpoints``. The OpenAPI document must list the same.
    static let routes: [String] = routes(on: .only)

    /// The routes `listener` serves, as `METHOD /path`.
    static func routes(on listener: Listener) -> [String] {
        endpoints.filter { listener.serves($0.audience) }.map { "\($0.method.rawValue) \($0.path)" }
    }

    /// Registers the routes of ``endpoints`` that `listener` serves on `router` (a `Router` or a `RouterGroup` of
    /// any context that knows the peer's address), each behind the check of its audience: a request without the
    /// audience's credential is refused before the handler reads anything. A handler's error becomes its
    /// ``APIError`` here, once (``answer(_:)``), so the routes answer the same under any router.
    func register<Methods: RouterMethods>(on router: Methods, for listener: Listener = .only)
    where Methods.Context: RemoteAddressRequestContext {
        for endpoint in Self.endpoints where listener.serves(endpoint.audience) {
            let handler = endpoint.handler(self)
            let audience = endpoint.audience
            let login = Dashboard.relativeReference(to: "/dashboard/login", from: endpoint.path)
            router.on(RouterPath(endpoint.path), method: endpoint.method) { request, context in
                do {
                    // The request's store calls (a dashboard session's lookup among them) share one deadline, also
                    // where the routes are mounted on an application's router (under the server's request
                    // middleware, its earlier start is kept).
                    if let redirect = Dashboard.ownSpelling(
                        method: endpoint.method.rawValue, routePath: endpoint.path, requestPath: request.uri.path)
                    {
                        return Self.response(redirect)
                    }
                    return try await StoreRequestDeadline.withRequest {
                        if audience.needsCredential,
                            let redirect = try await authorize(
                                audience, request, RouteContext(context), loginForm: login)
                        {
                            return redirect
                        }
                        return try await handler(request, RouteContext(context))
                    }
                } catch let error as HTTPParserError {
                    // The request itself broke off (the client closed the connection mid-body, or the read timeout
                    // did): Hummingbird answers 400 and closes, if anything can still be sent. No answer of ours,
                    // and no bug.
                    throw error
                } catch {
                    throw answer(error)
                }
            }
        }
    }

    /// Checks the request's credential for `audience` (``AttestKitApplication/authorize(_:authorization:session:client:)``:
    /// the credential budget, its counts and logs); a browser without a dashboard session is sent to the login form
    /// (the redirect returned), tools get the 401.
    func authorize(
        _ audience: RouteAudience, _ request: Request, _ context: RouteContext, loginForm: String = "dashboard/login"
    ) async throws(FlowError) -> Response? {
        try await dashboard.authorize(
            audience, authorization: request.headers[values: .authorization],
            cookies: request.headers[values: .cookie], accept: request.headers[values: .accept],
            client: clientKey(request, context), loginForm: loginForm
        ).map(Self.response)
    }

    /// The one mapping of a handler's error to its answer. The application's use cases throw ``FlowError``s and
    /// have logged a storage failure under them already; an error of the flows' modules raised by this edge
    /// itself (the dashboard reads the store) is logged once through the application; the rest by
    /// ``APIError/answering(_:logger:)`` (an error nothing converts logged as a bug).
    func answer(_ error: any Error) -> APIError {
        switch error {
        case let error as APIError: error
        case let error as FlowError: APIError(error)
        case _ where FlowError(converting: error) != nil: APIError(application.failure(error))
        default: APIError.answering(error, logger: application.logger)
        }
    }

    /// Which listener a router is for.
    enum Listener: Sendable {
        /// The only listener: every route.
        case only
        /// The public listener beside a backend listener: app routes and probes.
        case `public`
        /// The backend listener (`http.backend-port`): backend, operator and monitoring routes, and probes.
        case backend

        func serves(_ audience: RouteAudience) -> Bool {
            switch self {
            case .only: true
            case .public: audience.servedOnPublicListener
            case .backend: audience.servedOnBackendListener
            }
        }
    }

    /// The rate-limit key of the request's client (``ClientAddress``).
    func clientKey(_ request: Request, _ context: RouteContext) -> String {
        clientAddress.rateLimitKey(peer: context.remoteAddress, headers: request.headers)
    }

    /// The Prometheus exposition, with the key gauges refreshed from the store.
    private func metricsExposition(_: Request, _: RouteContext) async -> Response {
        await application.refreshGauges()
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(
            status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }
}

/// JSON answers.
enum JSONResponse {
    /// The answer of the application's dispatch.
    static func make(_ answer: EdgeResponse) -> Response {
        var fields = headers
        if answer.cacheControl != "no-store" { fields[.cacheControl] = answer.cacheControl }
        if !answer.hasBody { fields[.contentType] = nil }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: fields,
            body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    /// The headers of every JSON answer, built once (each answer gets a copy of the same storage).
    private static let headers: HTTPFields = {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return headers
    }()
}
