import AttestKitFlows
import NIOCore
public import Vapor

/// Guards Vapor routes with App Attest assertions.
///
/// For every request it reads the AttestKit headers (``AttestKitFlows/AssertionHeaders``), rebuilds the canonical
/// client data from the request actually received (method, path and query as sent, as far as Vapor keeps them:
/// `req.url.string`, with a path's `;` also tried as `%3B`, which Vapor does not tell apart; SHA-256 of the body
/// collected up to the flows' `bodyLimit`), verifies the assertion with the application's
/// ``AttestKitFlows/AssertionGate`` (advancing the counter atomically), and puts the key on `req.attestKit.key`
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
            let accepted = try await Self.verify(
                request, headers, body: body.map { Array($0.readableBytesView) } ?? [], gate: services.gate)
            request.attestKit.setKey(accepted.key)
        } catch {
            return AttestKitAbort(any: error).response()
        }
        return try await next.respond(to: request)
    }

    /// Verifies the assertion bound to the request as received: to the target as Vapor gives it, and only when
    /// that fails with `signature_invalid`, to its other spelling (``VaporRequestTarget``). A failed signature
    /// changes nothing in the store, so the second try sees the same state as the first.
    private static func verify(
        _ request: Request, _ headers: AssertionHeaders, body: [UInt8], gate: AssertionGate
    ) async throws(FlowError) -> AcceptedAssertion {
        func verify(_ target: String) async throws(FlowError) -> AcceptedAssertion {
            let binding = try AssertionBinding(
                method: request.method.rawValue, target: target, body: body, freshness: headers.freshness)
            return try await gate.verify(keyID: headers.keyID, assertion: headers.assertion, binding: binding)
        }
        var targets = VaporRequestTarget.candidates(of: request.url)
        let last = targets.removeLast()
        for target in targets {
            do {
                return try await verify(target)
            } catch let failure where failure.code.rawValue == "signature_invalid" {
                continue
            }
        }
        return try await verify(last)
    }
}

extension FlowError {
    /// 503 `attestkit_not_configured`: `app.attestKit` was never set.
    static var notConfiguredVapor: FlowError {
        FlowError(.init("attestkit_not_configured"), .notConfigured, "app.attestKit is not configured")
    }
}
