import AttestKitFlows
import AttestKitWire
import Foundation
import Vapor

/// The handler of ``AttestKitRoutes``: the application's one dispatch (`AttestKitApplication.respond(to:_:body:)`,
/// the Hummingbird service's too) over the request as Vapor received it, but for `GET /metrics`, whose format is the
/// edge's (``AttestKitIntegration/exposition``), and the operator dashboard's pages (the flows' `Dashboard`, the
/// service's too, over the same exposition).
struct AttestKitHandlers: Sendable {
    let integration: AttestKitIntegration
    let request: Request

    var application: AttestKitApplication { integration.application }

    /// The answer of `route`.
    func respond(_ route: AttestKitRoute) async throws -> Response {
        switch route.useCase {
        case .metrics: return try await metrics()
        case .dashboard: return try await dashboardPage()
        case .dashboardLoginForm: return Self.response(try integration.dashboard.loginForm())
        case .dashboardLogin:
            let answer = try await integration.dashboard.login(
                client: integration.client(of: request), logger: request.logger,
                fetchSite: request.headers["Sec-Fetch-Site"], origins: request.headers[.origin],
                authority: request.headers.first(name: .host)
            ) { [request] limit in
                try await VaporBody.collect(request, limit: limit)
            }
            return Self.response(answer)
        case .dashboardLogout:
            return Self.response(
                try await integration.dashboard.logout(
                    cookies: request.headers[.cookie], fetchSite: request.headers["Sec-Fetch-Site"],
                    origins: request.headers[.origin], authority: request.headers.first(name: .host),
                    client: integration.client(of: request), logger: request.logger))
        default: break
        }
        let answer = try await application.respond(
            to: route, VaporRouteRequest(request: request, integration: integration)
        ) { [request] limit in
            try await VaporBody.collect(request, limit: limit)
        }
        var headers: HTTPHeaders = ["Cache-Control": answer.cacheControl]
        if answer.hasBody { headers.add(name: .contentType, value: EdgeResponse.contentType) }
        return Response(
            status: HTTPResponseStatus(statusCode: answer.status), headers: headers,
            body: .init(data: Data(answer.body)))
    }

    /// `GET /dashboard`: the page, from the configured exposition (503 `metrics_not_configured` without one).
    private func dashboardPage() async throws -> Response {
        guard let exposition = integration.exposition else { throw FlowError.metricsNotConfigured }
        return Self.response(await integration.dashboard.page { String(decoding: exposition(), as: UTF8.self) })
    }

    /// The dashboard's answer as Vapor's response.
    static func response(_ answer: DashboardResponse) -> Response {
        var headers = HTTPHeaders()
        for (name, value) in answer.headers { headers.add(name: name, value: value) }
        return Response(
            status: HTTPResponseStatus(statusCode: answer.status), headers: headers, body: .init(string: answer.body))
    }

    /// `GET /metrics`: the configured exposition, with the key gauges refreshed first.
    private func metrics() async throws -> Response {
        guard let exposition = integration.exposition else { throw FlowError.metricsNotConfigured }
        await application.refreshGauges()
        return Response(
            status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(data: Data(exposition())))
    }
}

extension FlowError {
    /// 503 `metrics_not_configured`: `GET /metrics` of the Vapor edge without an exposition.
    static var metricsNotConfigured: FlowError {
        FlowError(
            .init("metrics_not_configured"), .notConfigured,
            "no metrics exposition is configured (AttestKitIntegration.exposition)")
    }
}

/// A request to a route of the table as the application's dispatch reads it (`EdgeRequest`): the target as Vapor
/// gives it back, the AttestKit headers, the `{keyId}` parameter, the client's address worked out only when asked.
struct VaporRouteRequest: EdgeRequest {
    let request: Request
    let integration: AttestKitIntegration

    var method: String { request.method.rawValue }
    var target: String { VaporRequestTarget.candidates(of: request.url).first ?? request.url.string }
    /// The `{keyId}` segment percent-encoded again: RoutingKit hands it over decoded, and the application decodes the
    /// segment as sent once (as Hummingbird gives it), so that `%253D` is `%3D` on both edges, never `=`.
    var keyID: String? { request.parameters.get("keyId")?.addingPercentEncoding(withAllowedCharacters: .alphanumerics) }
    var client: String { integration.client(of: request) }

    func header(_ name: String) -> AssertionHeaders.Lookup { VaporHeaders.lookup(name, in: request.headers) }
}
