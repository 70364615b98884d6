import Foundation
import Hummingbird
import Logging

/// The outermost middleware: turns every error into the API's JSON error envelope (a 500 `internal_error` for
/// anything unexpected, logged as a bug), counts requests by route pattern and status, and logs one line per
/// request without bodies or credentials.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = ServerRequestContext

    let metrics: ServerMetrics
    /// The routes of this listener, `METHOD /path`: a known path with another method is answered 405.
    let routes: [String]

    func handle(
        _ request: Request, context: ServerRequestContext,
        next: (Request, ServerRequestContext) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            var failure = APIError(any: error)
            if failure.code == "not_found", let allowed = Self.allowedMethods(for: request.uri.path, in: routes) {
                failure = APIError(
                    .methodNotAllowed, "method_not_allowed", "\(request.method.rawValue) is not allowed; use \(allowed)"
                )
            }
            if failure.code == APIError.internalError.code {
                context.logger.error("unexpected error: a bug", metadata: ["error.type": "\(type(of: error))"])
            }
            response = try failure.response(from: request, context: context)
        }
        let route = context.endpointPath ?? "unmatched"
        metrics.request(route: route, method: request.method.rawValue, status: response.status.code)
        let elapsed = (ContinuousClock.now - start).components
        let milliseconds = Double(elapsed.seconds) * 1_000 + Double(elapsed.attoseconds) / 1e15
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(response.status.code)",
                "ms": "\((milliseconds * 1_000).rounded() / 1_000)",
            ])
        return response
    }

    /// The methods of `routes` whose pattern matches `path`, or `nil` when none does.
    static func allowedMethods(for path: String, in routes: [String]) -> String? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        let methods = routes.compactMap { route -> Substring? in
            let halves = route.split(separator: " ")
            guard halves.count == 2 else { return nil }
            let pattern = halves[1].split(separator: "/", omittingEmptySubsequences: false)
            guard pattern.count == parts.count else { return nil }
            let matches = zip(pattern, parts).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
            return matches ? halves[0] : nil
        }
        return methods.isEmpty ? nil : methods.joined(separator: ", ")
    }
}
