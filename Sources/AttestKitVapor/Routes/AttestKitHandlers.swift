import AttestKitFlows
import AttestKitWire
import Foundation
import Prometheus
import Vapor

/// The handler of ``AttestKitRoutes``: the application's one dispatch (`AttestKitApplication.respond(to:_:body:)`,
/// the Hummingbird service's too) over the request as Vapor received it, but for `GET /metrics`, whose format is the
/// edge's (the Prometheus text of ``AttestKitIntegration/prometheus``).
struct AttestKitHandlers: Sendable {
    let integration: AttestKitIntegration
    let request: Request

    var application: AttestKitApplication { integration.application }

    /// The answer of `route`.
    func respond(_ route: AttestKitRoute) async throws -> Response {
        if route.useCase == .metrics { return try await metrics() }
        let request = self.request
        let headers = request.headers
        let integration = self.integration
        let answer = try await application.respond(
            to: route,
            EdgeRequest(
                method: request.method.rawValue,
                target: VaporRequestTarget.candidates(of: request.url).first ?? request.url.string,
                header: { VaporHeaders.lookup($0, in: headers) }, keyID: request.parameters.get("keyId"),
                client: { integration.client(of: request) })
        ) { limit in
            try await VaporBody.collect(request, limit: limit)
        }
        return Response(
            status: HTTPResponseStatus(statusCode: answer.status),
            headers: ["Content-Type": EdgeResponse.contentType, "Cache-Control": answer.cacheControl],
            body: .init(data: Data(answer.body)))
    }

    /// `GET /metrics`: the Prometheus exposition of the configured registry, with the key gauges refreshed.
    private func metrics() async throws -> Response {
        guard let registry = integration.prometheus else { throw FlowError.metricsNotConfigured }
        await application.refreshGauges()
        return Response(
            status: .ok, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
            body: .init(data: Data(registry.emitToBuffer())))
    }
}

extension FlowError {
    /// 503 `metrics_not_configured`: `GET /metrics` of the Vapor edge without a Prometheus registry.
    static var metricsNotConfigured: FlowError {
        FlowError(
            .init("metrics_not_configured"), .notConfigured,
            "no Prometheus registry is configured (AttestKitIntegration.prometheus)")
    }
}
