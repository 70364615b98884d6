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

/// The HTTP API's handlers and what they share. Each group of routes lives in its own extension file.
struct AttestKitAPI: Sendable {
    let configuration: ServerConfiguration
    let store: any AttestationStore
    let challenges: ChallengeIssuer
    let registrar: AttestationRegistrar
    let keyAttestation: KeyAttestation
    let keys: KeyAdministration
    let gate: AssertionGate
    let tokens: TokenService?
    let apple: AppleServices?
    let metrics: ServerMetrics
    let attestationsPerIP: RateLimiter
    let challengesPerIP: RateLimiter
    let dashboardLoginsPerIP: RateLimiter
    /// The wrong credentials a client may present (``ServerConfiguration/RateLimits/authFailuresPerIP``), shared by
    /// every credentialed route and the dashboard's login form.
    let authFailuresPerIP: RateLimiter
    let dashboardHistory = DashboardHistory()
    let credentials: Credentials
    let clientAddress: ClientAddress
    let now: @Sendable () -> Date

    /// One route: its method, its path (parameters as `{name}`), who may call it and the handler it calls.
    struct Endpoint: Sendable {
        let method: HTTPRequest.Method
        let path: String
        let audience: RouteAudience
        let handler: @Sendable (AttestKitAPI) -> @Sendable (Request, RouteContext) async throws -> Response
    }

    /// Every route of the API, in registration order: what ``register(on:)`` registers and ``routes`` lists.
    static let endpoints: [Endpoint] = [
        Endpoint(method: .post, path: "/v1/challenges", audience: .app) { $0.issueChallenge },
        Endpoint(method: .post, path: "/v1/attestations", audience: .app) { $0.attest },
        Endpoint(method: .post, path: "/v1/key-attestations", audience: .app) { $0.attestKey },
        Endpoint(method: .post, path: "/v1/assertions/verify", audience: .backend) { $0.verifyAssertion },
        Endpoint(method: .post, path: "/v1/devicecheck/query", audience: .backend) { $0.deviceCheckQuery },
        Endpoint(method: .post, path: "/v1/devicecheck/update", audience: .backend) { $0.deviceCheckUpdate },
        Endpoint(method: .post, path: "/v1/devicecheck/validate", audience: .backend) { $0.deviceCheckValidate },
        Endpoint(method: .post, path: "/v1/tokens", audience: .app) { $0.issueToken },
        Endpoint(method: .post, path: "/v1/tokens/consume", audience: .backend) { $0.consumeToken },
        Endpoint(method: .post, path: "/v1/tokens/introspect", audience: .backend) { $0.introspectToken },
        Endpoint(method: .get, path: "/.well-known/jwks.json", audience: .anyone) { $0.tokenKeys },
        Endpoint(method: .get, path: "/v1/keys/{keyId}", audience: .operator) { $0.adminKey },
        Endpoint(method: .post, path: "/v1/keys/{keyId}/revoke", audience: .operator) { $0.adminRevoke },
        Endpoint(method: .post, path: "/v1/devicecheck/unban", audience: .operator) { $0.deviceCheckUnban },
        Endpoint(method: .get, path: "/health", audience: .probe) { $0.health },
        Endpoint(method: .get, path: "/ready", audience: .probe) { $0.ready },
        Endpoint(method: .get, path: "/metrics", audience: .monitoring) { $0.metricsExposition },
        Endpoint(method: .get, path: "/dashboard", audience: .dashboard) { $0.dashboard },
        Endpoint(method: .get, path: "/dashboard/login", audience: .dashboardLogin) { $0.dashboardLoginForm },
        Endpoint(method: .post, path: "/dashboard/login", audience: .dashboardLogin) { $0.dashboardLogin },
        Endpoint(method: .post, path: "/dashboard/logout", audience: .dashboard) { $0.dashboardLogout },
    ]

    /// Every route as `METHOD /path`, derived from ``endpoints``. The OpenAPI document must list the same.
    static let routes: [String] = routes(on: .only)

    /// The routes `listener` serves, as `METHOD /path`.
    static func routes(on listener: Listener) -> [String] {
        endpoints.filter { listener.serves($0.audience) }.map { "\($0.method.rawValue) \($0.path)" }
    }

    /// Registers the routes of ``endpoints`` that `listener` serves on `router` (a `Router` or a `RouterGroup` of
    /// any context that knows the peer's address), each behind the check of its audience: a request without the
    /// audience's credential is refused before the handler reads anything. A handler's error becomes its
    /// ``APIError`` here, so the routes answer the same under any router.
    func register<Methods: RouterMethods>(on router: Methods, for listener: Listener = .only)
    where Methods.Context: RemoteAddressRequestContext {
        for endpoint in Self.endpoints where listener.serves(endpoint.audience) {
            let handler = endpoint.handler(self)
            let audience = endpoint.audience
            let metrics = self.metrics
            let login = Self.relativeReference(to: "/dashboard/login", from: endpoint.path)
            router.on(RouterPath(endpoint.path), method: endpoint.method) { request, context in
                let client = clientAddress.rateLimitKey(peer: context.remoteAddress, headers: request.headers)
                if let redirect = try authorize(
                    audience, request, client: client, logger: context.logger, loginForm: login)
                {
                    return redirect
                }
                do {
                    // The request's store calls share one deadline, also where the routes are mounted on an
                    // application's router (under the server's request middleware, its earlier start is kept).
                    return try await StoreRequestDeadline.withRequest {
                        try await handler(request, RouteContext(context))
                    }
                } catch {
                    throw Self.answer(error, logger: context.logger, metrics: metrics)
                }
            }
        }
    }

    /// Checks the request's credential for `audience`; a browser without a dashboard session is sent to the login
    /// form (the redirect returned), tools get the 401.
    ///
    /// A wrong credential takes one failure from `client`'s budget (``authFailuresPerIP``), is counted
    /// (`attestkit_auth_failures_total`) and logged with the client's address, never the credential. Once the budget
    /// is spent every credential of the client, right or wrong, is refused with 429, so that a right guess is not
    /// told from a wrong one; a right credential spends nothing (and, while nobody has failed, costs no lock). A
    /// request that presents none (no `Authorization`, no session cookie) guesses nothing and spends nothing.
    func authorize(
        _ audience: RouteAudience, _ request: Request, client: String, logger: Logger,
        loginForm: String = "dashboard/login"
    ) throws(APIError) -> Response? {
        let presented = credentials.presentsCredential(request.headers, for: audience)
        let refusal: APIError?
        do {
            try audience.authorize(request, credentials: credentials)
            refusal = nil
        } catch {
            refusal = error
        }
        guard let error = refusal else {
            // A right credential spends nothing, but once the budget is spent it is refused like a wrong one (429),
            // so that a right guess is not told apart. Without the limiter's lock while nobody has failed.
            if presented, let wait = authFailuresPerIP.exhaustion(client, now: now()) {
                try refuseSpent(client, audience: audience.rawValue, logger: logger, wait: wait)
            }
            return nil
        }
        if presented, error.status == .unauthorized {
            try reserveAuthFailure(client, audience: audience.rawValue, logger: logger)
            authFailed(client, audience: audience.rawValue, logger: logger)
        }
        guard audience == .dashboard, error.status == .unauthorized, Self.acceptsHTML(request) else { throw error }
        return Self.redirect(to: loginForm)
    }

    /// The reference relative to the route `path` that names `target` (both absolute route paths), so that a
    /// redirect holds wherever the routes are mounted: `/dashboard/login` from `/dashboard` is `dashboard/login`,
    /// from `/dashboard/logout` it is `login`.
    static func relativeReference(to target: String, from path: String) -> String {
        let directory = path.split(separator: "/").dropLast()
        var remaining = target.split(separator: "/")[...]
        for segment in directory {
            guard remaining.first == segment else { break }
            remaining = remaining.dropFirst()
        }
        return remaining.joined(separator: "/")
    }

    /// Reserves one failure from `client`'s credential budget, or throws 429 `rate_limited` when it is spent.
    func reserveAuthFailure(_ client: String, audience: String, logger: Logger) throws(APIError) {
        guard let wait = authFailuresPerIP.acquire(client, now: now()) else { return }
        try refuseSpent(client, audience: audience, logger: logger, wait: wait)
    }

    /// Counts, logs and throws the 429 of a spent credential budget.
    func refuseSpent(_ client: String, audience: String, logger: Logger, wait: Int) throws(APIError) {
        metrics.flows.rateLimited("auth_failures_per_ip")
        logger.notice(
            "credential refused: failure budget spent",
            metadata: ["client": "\(client)", "audience": "\(audience)"])
        throw APIError(FlowError.rateLimited("auth_failures_per_ip", retryAfter: wait))
    }

    /// Counts and logs a wrong credential of `client` (the failure it took stays spent).
    func authFailed(_ client: String, audience: String, logger: Logger) {
        metrics.authFailure(audience)
        logger.notice("credential refused", metadata: ["client": "\(client)", "audience": "\(audience)"])
    }

    /// The one mapping of a handler's error to its answer: ``APIError/init(any:)``, logging what the operator needs
    /// when storage fails (the store's reason names the operation and the error class, `SQLite database or disk is
    /// full`, never a query or a value).
    static func answer(_ error: any Error, logger: Logger, metrics: ServerMetrics? = nil) -> APIError {
        let failure = APIError(any: error)
        let store = (error as? StoreError) ?? ((error as? FlowError)?.underlying as? StoreError)
        if let store, failure.status == .serviceUnavailable {
            metrics?.storageError()
            logger.error(
                "storage unavailable: answering 503", metadata: ["code": "\(store.code)", "reason": "\(store.reason)"])
        }
        return failure
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

    /// Takes one request from the store's shared budget `budget` (`perMinute` 0: no limit), or throws 429; a store
    /// that cannot answer refuses the request (503), never lets it through.
    func limitShared(_ budget: String, perMinute: Int, name: String) async throws(FlowError) {
        guard perMinute > 0 else { return }
        let wait: Int?
        do {
            wait = try await store.take(from: try RateBudget(name: budget, perMinute: perMinute), now: now())
        } catch {
            throw FlowError(error)
        }
        if let wait { throw rateLimited(name, retryAfter: wait) }
    }

    /// Takes one request from a limiter, or throws 429.
    func limit(_ limiter: RateLimiter, _ key: String, name: String) throws(FlowError) {
        if let wait = limiter.acquire(key, now: now()) { throw rateLimited(name, retryAfter: wait) }
    }

    /// Counts a refusal by the rate limit `name` and returns it.
    private func rateLimited(_ name: String, retryAfter: Int) -> FlowError {
        metrics.flows.rateLimited(name)
        return FlowError.rateLimited(name, retryAfter: retryAfter)
    }

    /// 200 `{"status": "ok"}` while the process runs.
    private func health(_: Request, _: RouteContext) -> Response {
        JSONResponse.make(.ok, ["status": "ok"])
    }

    /// 200 `{"status": "ready"}` when the store answers, 503 otherwise.
    private func ready(_: Request, _: RouteContext) async throws -> Response {
        do {
            _ = try await store.keyCounts()
            metrics.storage(up: true)
        } catch {
            metrics.storage(up: false)
            throw APIError(.serviceUnavailable, "storage_unavailable", "storage is unavailable")
        }
        return JSONResponse.make(.ok, ["status": "ready"])
    }

    /// The Prometheus exposition, with the key gauges refreshed from the store.
    private func metricsExposition(_: Request, _: RouteContext) async -> Response {
        await refreshGauges()
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        return Response(
            status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: metrics.exposition())))
    }
}

extension AttestKitAPI {
    /// Refreshes the gauges read from the store (keys by environment and state, storage up) before they are read.
    func refreshGauges() async {
        if let counts = try? await store.keyCounts() {
            metrics.keys(counts)
            metrics.storage(up: true)
        } else {
            metrics.storage(up: false)
        }
    }
}

/// JSON answers.
enum JSONResponse {
    /// Encodes `value` as the body of a response with `status`.
    static func make(_ status: HTTPResponse.Status, _ value: some Encodable) -> Response {
        guard let data = try? WireJSON.encode(value) else {
            return Response(status: .internalServerError, headers: headers)
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// An assertion's answer: written by ``AssertionResponseWriter``, the same bytes as the `Encodable` form
    /// would write, without `JSONEncoder` unless a string needs escaping.
    static func make(_ status: HTTPResponse.Status, _ value: AssertionResponse) -> Response {
        guard let bytes = AssertionResponseWriter.write(value) ?? (try? WireJSON.encode(value)).map(Array.init) else {
            return Response(status: .internalServerError, headers: headers)
        }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The headers of every JSON answer, built once (each answer gets a copy of the same storage).
    private static let headers: HTTPFields = {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        return headers
    }()
}
