import AttestKit
import AttestKitWire
import Foundation
public import Hummingbird
import HTTPTypes

/// Guards Hummingbird routes with App Attest assertions.
///
/// For every request it reads ``AttestKitHeaders`` (key id, assertion, and a challenge id or a timestamp),
/// rebuilds the canonical client data (``AttestKitWire/RequestBinding``) from the request actually received
/// (method, path and query as sent, SHA-256 of the body), verifies the assertion with the stored key, advances
/// the counter atomically, and puts the key on the context (``AttestedRequestContext/attestedKey``) before
/// calling the route. The body is collected (up to ``bodyLimit``) and handed on intact.
///
/// Refusals are ``APIError``s: 401 `assertion_required` without the headers, 400 for malformed headers, 403 for a
/// failed verification (`signature_invalid`, `key_not_found`, `key_revoked`, `challenge_*`,
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
            let headers = try Self.headers(of: request)
            let body = try await request.collectBody(upTo: bodyLimit)
            let binding = try RequestBinding(
                method: request.method.rawValue, target: request.head.path ?? "/",
                body: body.readableBytesView, freshness: headers.freshness)
            let freshness = try AssertionGate.freshness(of: binding)
            let accepted = try await gate.verify(
                keyID: headers.keyID, assertion: headers.assertion, clientData: .clientData(binding.clientData),
                freshness: freshness)
            context.attestedKey = accepted.key
        } catch {
            // The binding, the gate (StoreError, AttestKitError) and a body over the limit (NIOTooManyBytesError)
            // throw errors that are not HTTPResponseErrors: unmapped, an application's router would answer 500 (or a
            // bare 413). Mapped here, as the API's own routes map them; the route's errors below are left alone.
            throw APIError(any: error)
        }
        return try await next(request, context)
    }

    /// The parsed assertion headers.
    struct Headers {
        let keyID: KeyID
        let assertion: [UInt8]
        let freshness: RequestBinding.Freshness
    }

    static func headers(of request: Request) throws -> Headers {
        let fields = request.headers
        let keyText = AttestKitHeaders.value(AttestKitHeaders.keyID, in: fields)
        let assertionText = AttestKitHeaders.value(AttestKitHeaders.assertion, in: fields)
        guard case .value(let key) = keyText, case .value(let assertion) = assertionText else {
            if keyText == .repeated || assertionText == .repeated { throw repeated }
            throw APIError(
                .unauthorized, "assertion_required",
                "this route needs \(AttestKitHeaders.keyID) and \(AttestKitHeaders.assertion) headers")
        }
        let freshness: RequestBinding.Freshness
        switch (
            AttestKitHeaders.value(AttestKitHeaders.challenge, in: fields),
            AttestKitHeaders.value(AttestKitHeaders.timestamp, in: fields)
        ) {
        case (.value(let id), .absent):
            freshness = .challenge(id)
        case (.absent, .value(let text)):
            guard text.utf8.count <= 16, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let milliseconds = Int64(text)
            else {
                throw APIError(.badRequest, "invalid_freshness", "\(AttestKitHeaders.timestamp) is Unix milliseconds")
            }
            freshness = .timestamp(milliseconds: milliseconds)
        case (.absent, .absent):
            throw APIError(
                .unauthorized, "assertion_required",
                "this route needs \(AttestKitHeaders.challenge) or \(AttestKitHeaders.timestamp)")
        default:
            throw APIError(
                .badRequest, "invalid_freshness",
                "send exactly one of \(AttestKitHeaders.challenge) and \(AttestKitHeaders.timestamp)")
        }
        return Headers(
            keyID: try Field.keyID(key),
            assertion: try Field.bytes(assertion, AttestKitHeaders.assertion, maximum: 4_096),
            freshness: freshness)
    }

    private static var repeated: APIError {
        APIError(.badRequest, "header_repeated", "each AttestKit header is sent once")
    }
}
