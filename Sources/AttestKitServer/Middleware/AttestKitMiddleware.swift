public import AttestKitFlows
public import Hummingbird
import NIOHTTP1

/// Guards Hummingbird routes with App Attest assertions.
///
/// Each route group has its `EnforcementPolicy`: `enforce`, `report` (verify, count apart, let
/// through unverified) or `off`, a rollout share, and the least trust level; a request may present a DeviceCheck
/// token or a debug token instead of an assertion, at a lower trust level (`RouteGuard`).
///
/// For every request it reads the AttestKit headers (`AttestKitHeaderNames`: key id, assertion,
/// and a challenge id or a timestamp),
/// rebuilds the canonical client data (`RequestBinding`) from the request actually received
/// (method, path and query as sent, SHA-256 of the body), verifies the assertion with the stored key, advances
/// the counter atomically, and puts the key on the context (``AttestedRequestContext/attestedKey``) before
/// calling the route. The body is collected (up to ``bodyLimit``) and handed on intact.
///
/// The headers, the binding and the verification are the flows' (`AssertionHeaders`,
/// `AssertionBinding`, `AssertionGate`); refusals become ``APIError``s once:
/// 401 `assertion_required` without the headers, 400 for malformed headers, 403 for a failed verification (`signature_invalid`, `key_not_found`, `key_revoked`, `key_expired`, `challenge_*`,
/// `timestamp_outside_window`), 409 for a replay (`counter_not_increasing`, `challenge_consumed`), 413 for a body
/// over the limit.
///
/// ```swift
/// let gate = AssertionGate(store: store)
/// router.group("api").add(middleware: AttestKitMiddleware<MyContext>(gate: gate))
///     .post("orders") { request, context in
///         let key = context.attestedKey  // verified
///         ...
///     }
/// ```
public struct AttestKitMiddleware<Context: AttestedRequestContext>: RouterMiddleware {
    /// The gate that decides.
    public var gate: AssertionGate { routeGuard.gate }
    /// The largest body hashed, in bytes.
    public let bodyLimit: Int
    /// The route group's guard: its mode, rollout, least trust, fallbacks (`RouteGuard`).
    public let routeGuard: RouteGuard
    /// The rollout subject of a request (a user id, say), or `nil` to use the key id it sends.
    public let subject: (@Sendable (Request, Context) -> String?)?
    /// Who sent a request, for the per-client budget of DeviceCheck validations, or `nil` for the TCP peer's address
    /// (an IPv6 peer by its /64) when the context knows it (`RemoteAddressRequestContext`). Behind a proxy, name
    /// the client from the header the proxy owns. An IP address is counted as the peer's would be (an IPv6 address
    /// by its /64: with an ``AttestKitServer``, its ``AttestKitServer/middleware(group:policy:bodyLimit:subject:)``
    /// names clients by `rate-limit.ipv6-prefix-length`); any other text is the budget's key as it is.
    public let client: (@Sendable (Request, Context) -> String?)?

    /// Creates the middleware: enforced for everyone, App Attest only.
    public init(gate: AssertionGate, bodyLimit: Int = 65_536) {
        self.init(guard: RouteGuard(gate: gate), bodyLimit: bodyLimit)
    }

    /// Creates the middleware of a route group guarded by `routeGuard` (mode, rollout, least trust, DeviceCheck and
    /// debug-token fallbacks), placing requests in the rollout by `subject` (`nil`: by the key id sent) and naming
    /// their sender by `client` (`nil`: the TCP peer).
    ///
    /// With an ``AttestKitServer``, prefer its ``AttestKitServer/middleware(group:policy:bodyLimit:subject:)``: this
    /// initializer's `bodyLimit` is 64 KiB whatever `http.body-limit` says, and its default `client` is the TCP peer
    /// even behind `http.trusted-proxies` (every client behind a proxy would share the proxy's budget).
    public init(
        guard routeGuard: RouteGuard, bodyLimit: Int = 65_536,
        subject: (@Sendable (Request, Context) -> String?)? = nil,
        client: (@Sendable (Request, Context) -> String?)? = nil
    ) {
        self.routeGuard = routeGuard
        self.bodyLimit = bodyLimit
        self.subject = subject
        self.client = client
    }

    /// Decides about the request (`RouteGuard`), then calls `next` with the decision on the context
    /// (``AttestedRequestContext/attestation``) and the verified key (``AttestedRequestContext/attestedKey``).
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var context = context
        if let offDecision = routeGuard.offDecision {
            // Unread; an outer guard's decision, if any, stays.
            if context.attestation == nil { context.attestation = offDecision }
            return try await next(request, context)
        }
        var request = request
        do {
            let headers = request.headers
            let named = subject?(request, context)
            // An outer guard's proof, or a body over the limit the group does not enforce: decided without the body.
            let attestation: RequestAttestation
            if let decided = try routeGuard.decisionBeforeBody(
                previous: context.attestation, declaredLength: headers[.contentLength].flatMap { Int($0) },
                bodyLimit: bodyLimit, lookup: { AttestKitHeaders.value($0, in: headers) }, subject: named)
            {
                attestation = decided
            } else {
                let body = try await request.collectBody(upTo: bodyLimit)
                attestation = try await routeGuard.check(
                    lookup: { AttestKitHeaders.value($0, in: headers) }, method: request.method.rawValue,
                    target: request.head.path ?? "/", body: body.readableBytesView, subject: named,
                    client: client.map { Self.budgetKey($0(request, context)) } ?? Self.peer(of: context))
            }
            context.attestation = attestation
            context.attestedKey = attestation.key
        } catch let error as HTTPParserError {
            // The request broke off mid-body: Hummingbird answers 400 and closes; no answer of ours.
            throw error
        } catch {
            // The flows throw FlowErrors and a body over the limit a NIOTooManyBytesError, neither of them an
            // HTTPResponseError: unmapped, an application's router would answer 500 (or a bare 413). Mapped here, as
            // the API's own routes map them; the route's errors below are left alone.
            throw APIError.answering(error, logger: context.logger)
        }
        return try await next(request, context)
    }

    /// The key of a client the application named: an IP address as the edges count it, other text as it is.
    private static func budgetKey(_ client: String?) -> String? {
        client.map { ClientAddress.rateLimitKey(address: $0) ?? $0 }
    }

    /// The TCP peer's address as a rate-limit key, when the context knows it.
    private static func peer(of context: Context) -> String? {
        guard let context = context as? any RemoteAddressRequestContext else { return nil }
        return ClientAddress(trustedProxies: []).rateLimitKey(peer: context.remoteAddress, headers: [:])
    }
}
