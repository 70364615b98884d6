public import AttestKitFlows
import HTTPTypes
import Hummingbird
import Logging
import NIOCore

extension APIError {
    /// A refusal or failure of the flows: the status is the kind's (`FlowError.Kind.httpStatus`, the
    /// table every edge shares). The code and reason are the flow error's; `Retry-After` comes with rate limits and some
    /// unavailability.
    public init(_ error: FlowError) {
        self.init(
            HTTPResponse.Status(code: error.kind.httpStatus), error.code.rawValue, error.reason,
            retryAfter: error.kind.retryAfter)
    }

    /// Any error: a flow error (or an error of the modules the flows call, converted) by ``init(_:)``,
    /// Hummingbird's by status, anything else 500 (a bug).
    public init(any error: any Error) {
        if let error = error as? APIError {
            self = error
        } else if let error = FlowError(converting: error) {
            self.init(error)
        } else if error is NIOTooManyBytesError {
            self.init(.contentTooLarge, "payload_too_large", "the body is over the limit")
        } else if let error = error as? HTTPError {
            switch error.status {
            case .contentTooLarge: self.init(.contentTooLarge, "payload_too_large", "the body is over the limit")
            case .notFound: self.init(.notFound, "not_found", "no such route")
            case .methodNotAllowed: self.init(.methodNotAllowed, "method_not_allowed", "method not allowed")
            case .badRequest: self.init(.badRequest, "invalid_request", error.body ?? "malformed request")
            default: self.init(error.status, "http_\(error.status.code)", error.body ?? error.status.reasonPhrase)
            }
        } else {
            self = .internalError
        }
    }

    /// ``init(any:)``, with a log line for an error nothing converts (a bug: 500 `internal_error`), by its type, as
    /// the Vapor edge writes one; a flow's own failures were logged where they were decided, and an ``APIError`` was
    /// mapped (and logged) before.
    static func answering(_ error: any Error, logger: Logger) -> APIError {
        let answer = APIError(any: error)
        if answer.code == APIError.internalError.code, !(error is APIError), FlowError(converting: error) == nil {
            FlowError.logUnexpected(error, logger: logger)
        }
        return answer
    }
}
