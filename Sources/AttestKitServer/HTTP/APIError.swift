public import HTTPTypes
public import Hummingbird
import AttestKitFlows
import AttestKitWire
import Foundation
import NIOCore

/// An error answer of the HTTP API: a status, a stable snake_case code and a human message, written as
/// `{"error": {"code": "...", "message": "..."}}` (`ErrorResponse`).
///
/// Every failure a handler or ``AttestKitMiddleware`` meets becomes one of these through
/// ``APIError/init(any:)``, and a flow's `FlowError` through ``APIError/init(_:)`` (its kind
/// gives the status, once), so clients and metrics see the same codes as the library's errors.
public struct APIError: Error, Sendable, Hashable, CustomStringConvertible, HTTPResponseError {
    /// The HTTP status.
    public let status: HTTPResponse.Status
    /// The stable code (`signature_invalid`, `counter_not_increasing`, `rate_limited`, ...).
    public let code: String
    /// What went wrong, for people. Never holds keys, tokens or attestation bytes.
    public let message: String
    /// Seconds to wait before retrying (429 and some 503), sent as `Retry-After`.
    public let retryAfter: Int?

    /// Creates an error answer.
    public init(_ status: HTTPResponse.Status, _ code: String, _ message: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
    }

    /// `status code: message`.
    public var description: String { "\(status.code) \(code): \(message)" }

    /// The JSON error envelope.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.cacheControl] = "no-store"
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        if let challenge = FlowError.authenticationChallenge(forCode: code) { headers[.wwwAuthenticate] = challenge }
        let body = ErrorResponse(code: code, message: message).json
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }
}

extension APIError {
    /// 400 `invalid_json`.
    static func invalidJSON(_ message: String) -> APIError { APIError(.badRequest, "invalid_json", message) }
    /// 400 `invalid_field`, naming the field: the flows' `FlowError.invalidField(_:_:file:line:)`.
    static func invalidField(_ field: String, _ message: String) -> APIError {
        APIError(FlowError.invalidField(field, message))
    }
    /// 500 `internal_error`: a bug.
    static let internalError = APIError(.internalServerError, "internal_error", "internal error")
}
