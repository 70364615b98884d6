public import AttestKit

extension AppleServiceError {
    /// A stable failure code. New codes may be added in later releases; existing ones never change.
    public struct Code: StableErrorCode {
        /// The stable snake_case string, e.g. `rate_limited`.
        public let rawValue: String
        /// Whether a later attempt may succeed.
        public let isRetryable: Bool

        private init(_ rawValue: String, retryable: Bool = false) {
            self.rawValue = rawValue
            self.isRetryable = retryable
        }

        /// Every code, for documentation and exhaustive tests.
        public static var allCases: [Code] {
            [
                .badDeviceToken, .badBits, .badTimestamp, .badAuthorizationToken, .badPayload,
                .incorrectEnvironment, .invalidAuthorizationToken, .authorizationTokenExpired, .forbidden,
                .noData, .methodNotAllowed, .rateLimited, .serverError, .serviceUnavailable,
                .transport, .timeout, .responseTooLarge, .unexpectedResponse, .receiptInvalid,
                .privateKeyInvalid, .tokenSigningFailed, .invalidConfiguration, .cancelled,
            ]
        }

        // MARK: HTTP 400

        /// 400: the device token is missing or malformed ("Missing or incorrectly formatted device token payload").
        public static let badDeviceToken = Code("bad_device_token")
        /// 400: the bits of an update are missing or malformed.
        public static let badBits = Code("bad_bits")
        /// 400: the timestamp is missing or malformed.
        public static let badTimestamp = Code("bad_timestamp")
        /// 400: the authorization token is missing or malformed ("Missing or badly formatted authorization token").
        public static let badAuthorizationToken = Code("bad_authorization_token")
        /// 400: the payload is missing or malformed; also any other 400 Apple's text does not name.
        public static let badPayload = Code("bad_payload")
        /// 400 of the receipt exchange: the receipt belongs to the other environment.
        public static let incorrectEnvironment = Code("incorrect_environment")

        // MARK: HTTP 401, 403, 404, 405

        /// 401: the provider token cannot be verified ("Unable to verify authorization token"), or for the receipt
        /// exchange does not match the receipt's team.
        public static let invalidAuthorizationToken = Code("invalid_authorization_token")
        /// 401: the provider token is too old.
        public static let authorizationTokenExpired = Code("authorization_token_expired")
        /// 403: the action is not allowed for this key or team.
        public static let forbidden = Code("forbidden")
        /// 404 of the receipt exchange: Apple holds no data for this receipt (it keeps data for 30 days); keep
        /// the last good receipt and try again later.
        public static let noData = Code("no_data")
        /// 405: the endpoint was used incorrectly.
        public static let methodNotAllowed = Code("method_not_allowed")

        // MARK: retryable

        /// 429: too many requests. Retried with backoff.
        public static let rateLimited = Code("rate_limited", retryable: true)
        /// 500 (or another 5xx but 503): Apple failed. Retried with backoff.
        public static let serverError = Code("server_error", retryable: true)
        /// 503: the service is unavailable. Retried with backoff.
        public static let serviceUnavailable = Code("service_unavailable", retryable: true)
        /// No answer: the connection failed or was closed before a response. Retried with backoff.
        public static let transport = Code("transport", retryable: true)

        // MARK: this side

        /// The call's deadline passed (retries included).
        public static let timeout = Code("timeout")
        /// The task making the call was cancelled (a stopping service, a caller gone): nothing is known of Apple,
        /// and nothing is retried. Not a failure of Apple's: callers neither count it as one nor back off.
        public static let cancelled = Code("cancelled")
        /// Apple's answer exceeded the response size cap.
        public static let responseTooLarge = Code("response_too_large")
        /// An answer this client does not understand: an unknown status, or a 200 whose body does not parse.
        public static let unexpectedResponse = Code("unexpected_response")
        /// The receipt the exchange returned does not verify (signer, type, App ID, key or age); the reason names
        /// the AttestKit code.
        public static let receiptInvalid = Code("receipt_invalid")
        /// The `.p8` key is not a PKCS#8 PEM P-256 private key.
        public static let privateKeyInvalid = Code("private_key_invalid")
        /// The provider token could not be signed.
        public static let tokenSigningFailed = Code("token_signing_failed")
        /// A key id, team id, URL or limit is unusable.
        public static let invalidConfiguration = Code("invalid_configuration")
    }
}
