public import AttestKitFlows
import NIOCore
public import Vapor

/// Guards Vapor routes with App Attest assertions.
///
/// Each route group has its `EnforcementPolicy`: `enforce`, `report` (verify, count apart, let
/// through unverified) or `off`, a rollout share, and the least trust level; a request may present a DeviceCheck
/// token or a debug token instead of an assertion, at a lower trust level (`RouteGuard`).
///
/// For every request it reads the AttestKit headers (`AssertionHeaders`), rebuilds the canonical
/// client data from the request actually received (method, path and query as sent, as far as Vapor keeps them:
/// `req.url.string`, with a path's `;` also tried as `%3B`, which Vapor does not tell apart; SHA-256 of the body
/// collected up to the flows' `bodyLimit`), verifies the assertion with the application's
/// `AssertionGate` (advancing the counter atomically), and puts the key on `req.attestKit.key`
/// before calling the route. Refusals answer the service's codes and statuses (``AttestKitAbort``): 401
/// `assertion_required`, 400 malformed headers, 403 a failed verification or a revoked key, 409 a replay, 413 a
/// body over the limit, 503 before `app.attestKit` is configured. DeviceCheck validations are budgeted per client by
/// `req.remoteAddress` (the socket's peer, never a forwarding header).
///
/// ```swift
/// app.grouped(AttestKitMiddleware()).post("orders") { req async throws -> String in
///     let key = try #require(req.attestKit.key)  // verified
///     ...
/// }
/// ```
public struct AttestKitMiddleware: AsyncMiddleware {
    /// The route group's policy: mode, rollout, least trust (`EnforcementPolicy`).
    public let policy: EnforcementPolicy
    /// The rollout subject of a request (a user id, say), or `nil` to use the key id it sends.
    public let subject: (@Sendable (Request) -> String?)?

    /// Creates the middleware of a route group; it uses the flows configured on `app.attestKit` (with their debug
    /// tokens and DeviceCheck fallback) under `policy` (by default enforced for everyone, App Attest only).
    public init(policy: EnforcementPolicy = .enforceAll, subject: (@Sendable (Request) -> String?)? = nil) {
        self.policy = policy
        self.subject = subject
    }

    /// Decides about the request (`RouteGuard`), then calls `next` with the decision on
    /// `req.attestKit.attestation` and the verified key on `req.attestKit.key`.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        guard policy.mode != .off else { return try await next.respond(to: request) }
        do {
            guard let services = request.application.attestKit else { throw FlowError.notConfiguredVapor }
            let routeGuard = services.routeGuard(policy, logger: request.logger)
            let body = try await request.body.collect(max: services.bodyLimit).get()
            let headers = request.headers
            let targets = VaporRequestTarget.candidates(of: request.url)
            let attestation = try await routeGuard.check(
                lookup: { name in
                    let values = headers[name]
                    switch values.count {
                    case 0: return .absent
                    case 1: return .value(values[0])
                    default: return .repeated
                    }
                }, method: request.method.rawValue, target: targets.first ?? request.url.string,
                alternativeTargets: Array(targets.dropFirst()),
                body: body.map { Array($0.readableBytesView) } ?? [], subject: subject?(request),
                client: request.remoteAddress?.ipAddress)
            request.attestKit.setAttestation(attestation)
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
