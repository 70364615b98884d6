public import AttestKit
public import AttestKitApple
public import AttestKitStore
public import AttestKitWire

// The one place where the errors of the modules the flows call become flow errors. Codes are kept; the kinds here
// decide the HTTP statuses of the API (through the edge's one mapping of ``FlowError/Kind``).

extension FlowError {
    /// A verification failure, keeping its code: malformed when the input is not even well formed (a `format`
    /// check, or a key identifier that is not 32 bytes of Base64), a conflict for a counter that did not increase
    /// (a replay), refused otherwise; a deployment policy's refusal (the `policy` check: `policy_os_version`,
    /// `policy_validation_category`, or an adopter's own code) is refused too, whatever its code.
    public init(_ error: AttestKitError) {
        let kind: Kind
        if error.check == .policy {
            kind = .refused
        } else if error.check == .format || error.code == .keyIdMalformed {
            kind = .malformed
        } else if error.code == .counterNotIncreasing {
            kind = .conflict
        } else {
            kind = .refused
        }
        self.init(
            Code(error.code.rawValue), kind, error.reason, underlying: error, file: error.file, line: error.line)
    }

    /// A store refusal, keeping its code: replays and duplicates are conflicts, missing, revoked or expired keys and
    /// unusable challenges refused, invalid input malformed; anything else is storage being unavailable, with a
    /// reason that tells nothing of the storage.
    public init(_ error: StoreError) {
        let kind: Kind
        switch error.code {
        case .counterNotIncreasing, .challengeConsumed, .keyExists, .receiptNotNewer: kind = .conflict
        case .challengeNotFound, .challengeExpired, .challengePurposeMismatch, .challengeKeyMismatch, .keyNotFound,
            .keyRevoked, .keyExpired:
            kind = .refused
        case .invalidInput: kind = .malformed
        default: kind = .unavailable(retryAfter: nil)
        }
        let reason = kind == .unavailable(retryAfter: nil) ? "storage is unavailable" : error.reason
        self.init(Code(error.code.rawValue), kind, reason, underlying: error)
    }

    /// A request binding that cannot be built or parsed: malformed, keeping its code.
    public init(_ error: RequestBindingError) {
        let reason: String =
            switch error.code {
            case .invalidMethod: "the method is 1 to 16 letters"
            case .invalidTarget: "the target starts with / and holds visible ASCII only, no fragment"
            case .invalidBodyHash: "the body hash is 32 bytes"
            case .invalidFreshness: "the challenge id or timestamp is malformed"
            case .invalidAppKey: "the app key is 1 to 1024 bytes"
            default: "the client data is not canonical AttestKit client data"
            }
        self.init(Code(error.code.rawValue), .malformed, reason, underlying: error)
    }

    /// An answer from Apple, or the lack of one: Apple's refusal of the client's token or bits is malformed input;
    /// its refusal of what this server wrote (the timestamp, the payload's shape) is an upstream failure keeping its
    /// code (`bad_timestamp`, `bad_payload`: the server's clock or Apple, never the client's input); Apple rate
    /// limiting us or being unreachable (or the call cancelled before its answer) is `apple_rate_limited` /
    /// `apple_unavailable` (unavailable, with Apple's `Retry-After` passed on in whole seconds, 1 to 3,600, when it
    /// sent one; 60 s for a rate limit without), Apple refusing this server's key `apple_authorization_failed` and
    /// anything else `apple_error` (upstream failures).
    public init(_ error: AppleServiceError) {
        let code = error.code.rawValue
        switch error.code {
        case .badDeviceToken, .badBits:
            self.init(Code(code), .malformed, "Apple refused the request: \(code)", underlying: error)
        case .badTimestamp, .badPayload:
            self.init(
                Code(code), .upstreamFailure, "Apple refused what this server sent: \(code)", underlying: error)
        case .rateLimited:
            self.init(
                Code("apple_rate_limited"), .unavailable(retryAfter: Self.seconds(error.retryAfter) ?? 60),
                "Apple is rate limiting this server", underlying: error)
        case .serverError, .serviceUnavailable, .transport, .timeout, .cancelled:
            self.init(
                Code("apple_unavailable"), .unavailable(retryAfter: Self.seconds(error.retryAfter)),
                "Apple's service did not answer: \(code)", underlying: error)
        case .badAuthorizationToken, .invalidAuthorizationToken, .authorizationTokenExpired, .forbidden,
            .privateKeyInvalid, .invalidConfiguration:
            self.init(
                Code("apple_authorization_failed"), .upstreamFailure, "Apple refused this server's key: \(code)",
                underlying: error)
        default:
            self.init(Code("apple_error"), .upstreamFailure, "Apple answered with an error: \(code)", underlying: error)
        }
    }

    /// Apple's `Retry-After` as the whole seconds this service's own answer carries: rounded up, 1 to 3,600 (a
    /// longer wait is asked for again by Apple after the hour), or `nil` without one.
    static func seconds(_ retryAfter: Duration?) -> Int? {
        guard let retryAfter else { return nil }
        let (seconds, attoseconds) = retryAfter.components
        let whole = seconds + (attoseconds > 0 ? 1 : 0)
        return Int(min(max(whole, 1), 3_600))
    }

    /// Any error the flows' dependencies throw, converted; `nil` for an error of another module (an edge's own,
    /// or a bug).
    public init?(converting error: any Error) {
        switch error {
        case let error as FlowError: self = error
        case let error as AttestKitError: self.init(error)
        case let error as StoreError: self.init(error)
        case let error as RequestBindingError: self.init(error)
        case let error as AppleServiceError: self.init(error)
        default: return nil
        }
    }
}
