import AttestKitFlows
import NIOCore
public import Vapor

/// Guards Vapor routes with App Attest assertions.
///
/// For every request it reads the AttestKit headers (`AssertionHeaders`), rebuilds the canonical
/// client data from the request actually received (method, path and query as sent, SHA-256 of the body collected
/// up to the flows' `bodyLimit`), verifies the assertion with the application's
/// `AssertionGate` (advancing the counter atomically), and puts the key on `req.attestKit.key`
/// before calling the route. Refusals answer the service's codes and statuses (``AttestKitAbort``): 401
/// `assertion_required`, 400 malformed headers, 403 a failed verification or a revoked key, 409 a replay, 413 a
/// body over the limit, 503 before `app.attestKit` is configured.
///
/// ```swift
/// app.grouped(AttestKitMiddleware()).post("orders") { req async throws -> String in
///     let key = try #require(req.attestKit.key)  // verified
///     ...
/// }
/// ```
public struct AttestKitMiddleware: AsyncMiddleware {
    /// Creates the middleware; it uses the flows configured on `app.attestKit`.
    public init() {}

    /// Verifies the request's assertion, then calls `next` with the key on `req.attestKit.key`.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        do {
            guard let services = request.application.attestKit else { throw FlowError.notConfiguredVapor }
            let headers = try AssertionHeaders { name in
                let values = request.headers[name]
                switch values.count {
                case 0: return .absent
                case 1: return .value(values[0])
                default: return .repeated
                }
            }
            let body = try await request.body.collect(max: services.bodyLimit).get()
            let binding = try AssertionBinding(
                method: request.method.rawValue, target: request.url.string,
                body: body.map { Array($0.readableBytesView) } ?? [], freshness: headers.freshness)
            let accepted = try await services.gate.verify(
                keyID: headers.keyID, assertion: headers.assertion, binding: binding)
            request.attestKit.setKey(accepted.key)
        } catch {
            return AttestKitAbort(any: error).response()
        }
        return try await next.respond(to: request)
    }
}

extension FlowError {
    /// 503 `attestkit_not_configured`: `app.attestKit` was never set.
    static var notConfiguredVapor: FlowError {
        FlowError(.init("attestkit_not_configured"), .notConfigured, "app.attestKit is not configured")
    }
}
