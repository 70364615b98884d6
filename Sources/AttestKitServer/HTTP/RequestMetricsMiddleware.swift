import AttestKitStore
import AttestKitFlows
import Foundation
import Hummingbird
import Logging
import NIOHTTP1

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
        // The route pattern for metrics and logs: the router's, or for a known path with another method the
        // pattern it matched, or `unmatched` (never the raw path: labels stay a closed set).
        var matched = context.endpointPath
        do {
            // The request's store calls share one deadline (operation_timeout from the request's start).
            response = try await StoreRequestDeadline.withRequest { try await next(request, context) }
        } catch let error as HTTPParserError {
            // The request broke off (a client gone mid-body, the read timeout): Hummingbird answers 400 and closes.
            // Counted and logged as that 400, not as a 500 and a bug.
            record(request, context: context, route: matched ?? "unmatched", status: 400, since: start)
            throw error
        } catch {
            // An error nothing converts is logged (once: the routes' errors arrive mapped already).
            var failure = APIError.answering(error, logger: context.logger)
            var allow: String?
            if failure.code == "not_found" {
                matched = "unmatched"
                if let allowed = Self.allowed(for: request.uri.path, in: routes) {
                    failure = APIError(
                        .methodNotAllowed, "method_not_allowed",
                        "\(request.method.rawValue) is not allowed; use \(allowed.methods)")
                    allow = allowed.methods
                    matched = allowed.pattern
                }
            }
            response = try failure.response(from: request, context: context)
            if let allow { response.headers[.allow] = allow }
        }
        record(request, context: context, route: matched ?? "unmatched", status: response.status.code, since: start)
        return response
    }

    /// Counts a request answered with `status` and logs its line.
    private func record(
        _ request: Request, context: ServerRequestContext, route: String, status: Int,
        since start: ContinuousClock.Instant
    ) {
        let duration = ContinuousClock.now - start
        metrics.request(route: route, method: request.method.rawValue, status: status, duration: duration)
        let elapsed = duration.components
        let milliseconds = Double(elapsed.seconds) * 1_000 + Double(elapsed.attoseconds) / 1e15
        context.logger.info(
            "request",
            metadata: [
                "method": "\(request.method.rawValue)", "route": "\(route)", "status": "\(status)",
                "ms": "\((milliseconds * 1_000).rounded() / 1_000)",
            ])
    }

    /// The methods of `routes` whose pattern matches `path` (`GET, POST`) and that pattern, or `nil` when none does.
    /// A `{parameter}` matches a non-empty segment only, as the router does.
    static func allowed(for path: String, in routes: [String]) -> (methods: String, pattern: String)? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        var pattern: Substring?
        let methods = routes.compactMap { route -> Substring? in
            let halves = route.split(separator: " ")
            guard halves.count == 2 else { return nil }
            let segments = halves[1].split(separator: "/", omittingEmptySubsequences: false)
            guard segments.count == parts.count else { return nil }
            let matches = zip(segments, parts).allSatisfy { $0.hasPrefix("{") ? !$1.isEmpty : $0 == $1 }
            guard matches else { return nil }
            pattern = halves[1]
            return halves[0]
        }
        guard let pattern, !methods.isEmpty else { return nil }
        return (methods.joined(separator: ", "), String(pattern))
    }
}
