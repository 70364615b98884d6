public import AttestKitFlows
public import Hummingbird

/// Guards Hummingbird routes with App Attest assertions.
///
/// For every request it reads the AttestKit headers (`AttestKitHeaderNames`: key id, assertion, and a challenge id or a timestamp),
/// rebuilds the canonical client data (`RequestBinding`) from the request actually received
/// (method, path and query as sent, SHA-256 of the body), verifies the assertion with the stored key, advances
/// the counter atomically, and puts the key on the context (``AttestedRequestContext/attestedKey``) before
/// calling the route. The body is collected (up to ``bodyLimit``) and handed on intact.
///
/// The headers, the binding and the verification are the flows' (`AssertionHeaders`,
/// `AssertionBinding`, `AssertionGate`); refusals become ``APIError``s once:
/// 401 `assertion_required` without the headers, 400 for malformed headers, 403 for a failed verification (`signature_invalid`, `key_not_found`, `key_revoked`, `challenge_*`,
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
    public let gate: AssertionGate
    /// The largest body hashed, in bytes.
    public let bodyLimit: Int

    /// Creates the middleware.
    public init(gate: AssertionGate, bodyLimit: Int = 65_536) {
        self.gate = gate
        self.bodyLimit = bodyLimit
    }

    /// Verifies the request's assertion, then calls `next` with the key on the context.
    public func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        var request = request
        var context = context
        do {
            let headers = try AssertionHeaders { AttestKitHeaders.value($0, in: request.headers) }
            let body = try await request.collectBody(upTo: bodyLimit)
            let binding = try AssertionBinding(
                method: request.method.rawValue, target: request.head.path ?? "/", body: body.readableBytesView,
                freshness: headers.freshness)
            context.attestedKey = try await gate.verify(
                keyID: headers.keyID, assertion: headers.assertion, binding: binding
            ).key
        } catch {
            // The flows throw FlowErrors and a body over the limit a NIOTooManyBytesError, neither of them an
            // HTTPResponseError: unmapped, an application's router would answer 500 (or a bare 413). Mapped here, as
            // the API's own routes map them; the route's errors below are left alone.
            throw APIError(any: error)
        }
        return try await next(request, context)
    }
}
