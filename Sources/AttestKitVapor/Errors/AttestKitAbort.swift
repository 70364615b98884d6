public import AttestKitFlows
import AttestKitWire
import Foundation
import Logging
import NIOHTTP1
public import Vapor

/// The one place a `FlowError` becomes Vapor's HTTP: the status from its kind
/// (`FlowError.Kind.httpStatus`, the table the Hummingbird edge uses too), `Retry-After` where the
/// kind carries one, and the body `{"error": {"code": "...", "message": "..."}}` with the service's codes.
///
/// It is an `AbortError` (so Vapor's `ErrorMiddleware` gives the right status when one escapes) and writes the
/// AttestKit envelope itself as an `AsyncResponseEncodable`, which ``AttestKitMiddleware`` and ``AttestKitRoutes``
/// answer with.
public struct AttestKitAbort: AbortError, AsyncResponseEncodable, Sendable {
    /// The HTTP status.
    public let status: HTTPResponseStatus
    /// The stable code (`signature_invalid`, `counter_not_increasing`, ...).
    public let code: String
    /// What went wrong, for people; never holds keys, tokens or attestation bytes.
    public let reason: String
    /// Seconds to wait before retrying, sent as `Retry-After`.
    public let retryAfter: Int?

    /// The answer to a refusal or failure of the flows.
    public init(_ error: FlowError) {
        self.init(
            status: error.kind.httpStatus, code: error.code.rawValue, reason: error.reason,
            retryAfter: error.kind.retryAfter)
    }

    /// The answer to any error: a flow error (or an error the flows convert), a body over the limit (413
    /// `payload_too_large`), a body NIO could not read to its end (the client gone mid-upload: 400
    /// `invalid_request`, the client's doing, not a bug), anything else 500 `internal_error` (a bug).
    public init(any error: any Error) {
        if let error = error as? AttestKitAbort {
            self = error
        } else if let error = FlowError(converting: error) {
            self.init(error)
        } else if let abort = error as? any AbortError, abort.status == .payloadTooLarge {
            self.init(status: 413, code: "payload_too_large", reason: "the body is over the limit", retryAfter: nil)
        } else if error is HTTPParserError {
            self.init(
                status: 400, code: "invalid_request", reason: "the request is malformed or broke off", retryAfter: nil)
        } else {
            self.init(status: 500, code: "internal_error", reason: "internal error", retryAfter: nil)
        }
    }

    /// The envelope answering `error`, and a log line for an error nothing decided (a bug: answered 500
    /// `internal_error`), as `attestkit serve` writes one; a flow's own failures were logged where they were decided.
    static func response(to error: any Error, logger: Logger) -> Response {
        let abort = AttestKitAbort(any: error)
        if abort.code == "internal_error", FlowError(converting: error) == nil {
            FlowError.logUnexpected(error, logger: logger)
        } else if error is HTTPParserError {
            // A client gone mid-body, or bytes that are not HTTP: the client's doing, not a bug.
            logger.debug("request broke off or is malformed: answering 400", metadata: ["code": "invalid_request"])
        }
        return abort.response()
    }

    init(status: Int, code: String, reason: String, retryAfter: Int?) {
        self.status = HTTPResponseStatus(statusCode: status)
        self.code = code
        self.reason = reason
        self.retryAfter = retryAfter
    }

    /// `Content-Type`, `Cache-Control: no-store`, `Retry-After` when known, and `WWW-Authenticate` with a refusal
    /// for want of a credential.
    public var headers: HTTPHeaders {
        var headers: HTTPHeaders = [
            "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store",
        ]
        if let retryAfter { headers.replaceOrAdd(name: "Retry-After", value: String(retryAfter)) }
        if let challenge = FlowError.authenticationChallenge(forCode: code) {
            headers.replaceOrAdd(name: "WWW-Authenticate", value: challenge)
        }
        return headers
    }

    /// The JSON error envelope.
    public func encodeResponse(for request: Request) async throws -> Response { response() }

    /// The JSON error envelope, with ``status`` and ``headers``.
    public func response() -> Response {
        Response(status: status, headers: headers, body: .init(data: ErrorResponse(code: code, message: reason).json))
    }
}
