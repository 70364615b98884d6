public import AttestKitFlows
import NIOCore
public import Vapor

/// Guards Vapor routes with App Attest assertions.
///
/// Each route group has its `EnforcementPolicy`: `enforce`, `report` (verify, count apart, let
/// through unverified) or `off`, a rollout share, and the least trust level; a request may present a DeviceCheck
/// token or a debug token instead of an assertion, at a lower trust level (`RouteGuard`). The policy is a named
/// group of the application's configuration (`enforcement` and `enforcement.groups`, as for
/// `POST /v1/requests/verify`), or one given in code.
///
/// For every request it reads the AttestKit headers (`AssertionHeaders`), rebuilds the canonical
/// client data from the request actually received (method, path and query as sent, as far as Vapor keeps them:
/// `req.url.string`, with a path's `;` also tried as `%3B`, which Vapor does not tell apart; SHA-256 of the body
/// collected up to the configuration's `bodyLimit`), verifies the assertion with the application's
/// `AssertionGate` (advancing the counter atomically), and puts the key on `req.attestKit.key`
/// before calling the route. Refusals answer the service's codes and statuses (``AttestKitAbort``): 401
/// `assertion_required`, 400 malformed headers, 403 a failed verification or a revoked key, 409 a replay, 413 a
/// body over the limit, 503 `group_unknown` for a group that is not configured (the names are logged, not
/// answered), 503 before `app.attestKit` is configured. DeviceCheck validations are budgeted per client address
/// (``AttestKitIntegration/client(of:)``: the peer, or behind a trusted proxy the address it forwarded).
///
/// The body is collected before the route runs, up to the configuration's `bodyLimit` (64 KiB by default): Vapor
/// then skips a route's own `body: .collect(maxSize:)`, so a route behind the middleware that must accept less
/// checks `req.body.data?.readableBytes` itself.
///
/// ```swift
/// app.grouped(AttestKitMiddleware(group: "orders")).post("orders") { req async throws -> String in
///     let key = try #require(req.attestKit.key)  // verified
///     ...
/// }
/// ```
public struct AttestKitMiddleware: AsyncMiddleware {
    /// Where the route group's policy comes from.
    enum Source: Sendable {
        /// A named group of the application's configuration.
        case group(String)
        /// A policy given in code.
        case policy(EnforcementPolicy)
    }

    let source: Source
    /// The rollout subject of a request (a user id, say), or `nil` to use the key id it sends.
    public let subject: (@Sendable (Request) -> String?)?

    /// Creates the middleware of the route group `group` of the application's configuration (`default`: the
    /// `enforcement` settings; by default enforced for everyone, App Attest only).
    public init(group: String = "default", subject: (@Sendable (Request) -> String?)? = nil) {
        self.source = .group(group)
        self.subject = subject
    }

    /// Creates the middleware of a route group under `policy`, with the application's gate, fallbacks, risk policy
    /// and metrics (`AttestKitApplication.routeGuard(policy:)`).
    public init(policy: EnforcementPolicy, subject: (@Sendable (Request) -> String?)? = nil) {
        self.source = .policy(policy)
        self.subject = subject
    }

    /// The policy given in code, or `nil` for a configured group.
    public var policy: EnforcementPolicy? {
        if case .policy(let policy) = source { return policy }
        return nil
    }

    /// Decides about the request (`RouteGuard`), then calls `next` with the decision on
    /// `req.attestKit.attestation` and the verified key on `req.attestKit.key`.
    public func respond(to request: Request, chainingTo next: any AsyncResponder) async throws -> Response {
        if case .policy(let policy) = source, policy.mode == .off { return try await next.respond(to: request) }
        do {
            guard let integration = request.application.attestKit else { throw FlowError.notConfiguredVapor }
            let application = integration.application
            let routeGuard: RouteGuard
            switch source {
            case .group(let name):
                // A group this application does not configure is the deployment's mistake, not the app's request:
                // 503 as an unconfigured integration is, logged with the names here, never answered to the app.
                do throws(FlowError) {
                    routeGuard = try application.routeGuard(group: name)
                } catch {
                    application.logger.error(
                        "AttestKitMiddleware names a route group the configuration does not have",
                        metadata: [
                            "group": "\(name)", "configured": "\(application.groupNames.joined(separator: ","))",
                        ])
                    throw FlowError.groupNotConfiguredVapor
                }
            case .policy(let policy): routeGuard = application.routeGuard(policy: policy)
            }
            if let offDecision = routeGuard.offDecision {
                // Unread; an outer guard's decision, if any, stays.
                if request.attestKit.attestation == nil { request.attestKit.setAttestation(offDecision) }
                return try await next.respond(to: request)
            }
            let headers = request.headers
            let named = subject?(request)
            let limit = application.configuration.bodyLimit
            // An outer guard's proof, or a body over the limit the group does not enforce: decided without the body.
            if let decided = try routeGuard.decisionBeforeBody(
                previous: request.attestKit.attestation,
                declaredLength: headers.first(name: .contentLength).flatMap { Int($0) }, bodyLimit: limit,
                lookup: { VaporHeaders.lookup($0, in: headers) }, subject: named)
            {
                request.attestKit.setAttestation(decided)
            } else {
                let body = try await VaporBody.collect(request, limit: limit)
                let targets = VaporRequestTarget.candidates(of: request.url)
                request.attestKit.setAttestation(
                    try await routeGuard.check(
                        lookup: { VaporHeaders.lookup($0, in: headers) }, method: request.method.rawValue,
                        target: targets.first ?? request.url.string, alternativeTargets: Array(targets.dropFirst()),
                        body: body, subject: named, client: integration.client(of: request)))
            }
        } catch {
            return AttestKitAbort.response(to: error, logger: request.logger)
        }
        return try await next.respond(to: request)
    }
}

/// The AttestKit headers of a Vapor request.
enum VaporHeaders {
    /// The one value of the header `name`: absent, one value, or repeated (sent twice or joined with commas:
    /// presents nothing valid).
    static func lookup(_ name: String, in headers: HTTPHeaders) -> AssertionHeaders.Lookup {
        AssertionHeaders.Lookup(values: headers[name])
    }
}

extension FlowError {
    /// 503 `attestkit_not_configured`: `app.attestKit` was never set.
    static var notConfiguredVapor: FlowError {
        FlowError(.init("attestkit_not_configured"), .notConfigured, "app.attestKit is not configured")
    }

    /// The middleware's route group is not configured: 503 `group_unknown`, without the configured names.
    static var groupNotConfiguredVapor: FlowError {
        FlowError(.groupUnknown, .notConfigured, "this route's group is not configured")
    }
}
