public import AttestKit
public import AttestKitApple
public import AttestKitStore
public import AttestKitWire
import HTTPTypes
import Hummingbird
import NIOCore

extension APIError {
    /// A verification failure: 400 when the input is not even well formed (`format` check, or a key identifier
    /// that is not 32 bytes of Base64), 409 for a counter that did not increase (a replay), 403 otherwise.
    public init(_ error: AttestKitError) {
        let malformed = error.check == .format || error.code == .keyIdMalformed
        let status: HTTPResponse.Status =
            malformed ? .badRequest : error.code == .counterNotIncreasing ? .conflict : .forbidden
        self.init(status, error.code.rawValue, error.reason)
    }

    /// A store refusal: replays and duplicates 409, missing or revoked keys and unusable challenges 403,
    /// storage failures 503.
    public init(_ error: StoreError) {
        let status: HTTPResponse.Status
        switch error.code {
        case .counterNotIncreasing, .challengeConsumed, .keyExists, .receiptNotNewer: status = .conflict
        case .challengeNotFound, .challengeExpired, .challengePurposeMismatch, .challengeKeyMismatch, .keyNotFound,
            .keyRevoked:
            status = .forbidden
        case .invalidInput: status = .badRequest
        default: status = .serviceUnavailable
        }
        let message = status == .serviceUnavailable ? "storage is unavailable" : error.reason
        self.init(status, error.code.rawValue, message)
    }

    /// A request binding that cannot be built or parsed: 400.
    public init(_ error: RequestBindingError) {
        let message: String =
            switch error.code {
            case .invalidMethod: "the method is 1 to 16 letters"
            case .invalidTarget: "the target starts with / and holds visible ASCII only, no fragment"
            case .invalidBodyHash: "the body hash is 32 bytes"
            case .invalidFreshness: "the challenge id or timestamp is malformed"
            default: "the client data is not canonical AttestKit client data"
            }
        self.init(.badRequest, error.code.rawValue, message)
    }

    /// An answer from Apple, or the lack of one: Apple's refusal of the client's token or bits is 400, Apple
    /// being unreachable or rate limiting us 503, anything else from Apple 502.
    public init(_ error: AppleServiceError) {
        switch error.code {
        case .badDeviceToken, .badBits, .badTimestamp, .badPayload:
            self.init(.badRequest, error.code.rawValue, "Apple refused the request: \(error.code.rawValue)")
        case .rateLimited:
            self.init(.serviceUnavailable, "apple_rate_limited", "Apple is rate limiting this server", retryAfter: 60)
        case .serverError, .serviceUnavailable, .transport, .timeout:
            self.init(
                .serviceUnavailable, "apple_unavailable", "Apple's service did not answer: \(error.code.rawValue)")
        case .badAuthorizationToken, .invalidAuthorizationToken, .authorizationTokenExpired, .forbidden,
            .privateKeyInvalid, .invalidConfiguration:
            self.init(
                .badGateway, "apple_authorization_failed", "Apple refused this server's key: \(error.code.rawValue)")
        default:
            self.init(.badGateway, "apple_error", "Apple answered with an error: \(error.code.rawValue)")
        }
    }

    /// Any error: the typed ones by their mapping, Hummingbird's by status, anything else 500 (a bug).
    public init(any error: any Error) {
        switch error {
        case let error as APIError: self = error
        case let error as AttestKitError: self.init(error)
        case let error as StoreError: self.init(error)
        case let error as RequestBindingError: self.init(error)
        case let error as AppleServiceError: self.init(error)
        case is NIOTooManyBytesError: self.init(.contentTooLarge, "payload_too_large", "the body is over the limit")
        case let error as HTTPError:
            switch error.status {
            case .contentTooLarge: self.init(.contentTooLarge, "payload_too_large", "the body is over the limit")
            case .notFound: self.init(.notFound, "not_found", "no such route")
            case .methodNotAllowed: self.init(.methodNotAllowed, "method_not_allowed", "method not allowed")
            case .badRequest: self.init(.badRequest, "invalid_request", error.body ?? "malformed request")
            default:
                self.init(
                    error.status, "http_\(error.status.code)", error.body ?? error.status.reasonPhrase)
            }
        default: self = .internalError
        }
    }
}
