public import Foundation

/// An error of the app-side client: the service or the app's server refused a request, the network failed, the
/// device could not produce what was asked, or no level of the strategy could serve the request.
///
/// Every failure of the system (the Keychain's `OSStatus`, `DCError`, `URLError`, JSON decoding) arrives wrapped in
/// this type. Errors are equal when their codes are. The text never contains assertions, attestations or tokens.
public struct AttestKitClientError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong: a stable, bounded label (fit for a metric).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Value: String {
            case httpError = "http_error"
            case transport
            case invalidResponse = "invalid_response"
            case invalidRequest = "invalid_request"
            case device
            case unsupported
            case unavailable
            case keyRevoked = "key_revoked"
            case keyStore = "key_store"
            case attestationDeferred = "attestation_deferred"
            case answerLost = "answer_lost"
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The server answered with a status other than 2xx; ``AttestKitClientError/status`` has it and
        /// ``AttestKitClientError/serviceCode`` the service's error code when the body was
        /// `{"error": {"code", "message"}}`.
        public static let httpError = Code(.httpError)
        /// The request could not be sent or no answer arrived.
        public static let transport = Code(.transport)
        /// The answer was not what the service's API promises, or not the type the caller asked to decode.
        public static let invalidResponse = Code(.invalidResponse)
        /// The request cannot be signed: no URL, a streamed body, or a target the binding cannot express.
        public static let invalidRequest = Code(.invalidRequest)
        /// The device failed; ``AttestKitClientError/deviceError`` says how.
        public static let device = Code(.device)
        /// A level the strategy needs has no provider (no manager for App Attest, no DeviceCheck provider).
        public static let unsupported = Code(.unsupported)
        /// The proof cannot be made now: App Attest is unsupported or backing off (Apple's service unavailable,
        /// a registration to retry), and no later level of the strategy could serve the request.
        /// ``AttestKitClientError/retryAfter`` says when App Attest will be tried again.
        public static let unavailable = Code(.unavailable)
        /// The service revoked the app's key (`key_revoked`). The manager does not attest a new key on its own,
        /// which would undo the operator's decision, unless the app opted in
        /// (``AppAttestManager/Configuration/reattestAfterRevocation``) or calls ``AppAttestManager/resetKey(_:)``.
        public static let keyRevoked = Code(.keyRevoked)
        /// The key store failed (``AttestKitClientError/osStatus`` has the Keychain's status), or another manager
        /// of this process uses the same store.
        public static let keyStore = Code(.keyStore)
        /// The service defers this install's attestation (its ramp: 429 `attestation_deferred` to the attestation
        /// challenge). Not a failure: the generated key is kept, nothing is attested, and the same key asks again
        /// after ``AttestKitClientError/retryAfter``; meanwhile ``AttestKitHTTPClient`` serves requests at the
        /// strategy's next levels, as when App Attest is unavailable. Seen by a caller only when no later level
        /// could serve the request (``AttestationStrategy/appAttestOnly``).
        public static let attestationDeferred = Code(.attestationDeferred)
        /// The service registered a new key's attestation (``AppAttestManager/attestKey(appData:)``,
        /// ``AppAttestManager/attestAppKey(publicKeyDER:)``), but its answer was lost: the post of the same
        /// attestation again, after a passing failure, was answered `challenge_consumed`, `challenge_not_found` or
        /// `key_exists`, as for a key an earlier post registered. Not a refusal, and nothing was attested again; the
        /// answer's record (the app's bytes, an app key's thumbprint and certificate) cannot be had again. The next
        /// call attests a new key.
        public static let answerLost = Code(.answerLost)

        /// The snake_case name.
        public var description: String { value.rawValue }
    }

    /// A refusal by the AttestKit verification of the request's proof, before the app's route ran: the refusals
    /// the client acts on. Only the exact status and code pairs of the AttestKit middleware count; the same code
    /// with another status came from somewhere else (the app's route) and is passed on untouched.
    public enum VerificationRefusal: String, Sendable, Hashable, CaseIterable {
        /// 403 `key_not_found`: the service does not know the key.
        case keyNotFound = "key_not_found"
        /// 403 `key_revoked`: the operator revoked the key.
        case keyRevoked = "key_revoked"
        /// 403 `key_expired`: the key went unused for longer than the service keeps idle keys
        /// (`keys.expire-after`); like a key the service does not know.
        case keyExpired = "key_expired"
        /// 403 `policy_validation_category_changed`: the key was attested by a build of another validation category
        /// (the keychain outlives an App Store build replacing a TestFlight one); a key attested by this build is
        /// judged by its own category.
        case validationCategoryChanged = "policy_validation_category_changed"
        /// 409 `counter_not_increasing`: overtaken by a later assertion, or the device's counter went back.
        case counterNotIncreasing = "counter_not_increasing"
        /// 403 `timestamp_outside_window`: the device's clock is outside the service's window.
        case timestampOutsideWindow = "timestamp_outside_window"

        /// The status the AttestKit middleware answers this refusal with.
        public var status: Int { self == .counterNotIncreasing ? 409 : 403 }
    }

    /// The code.
    public let code: Code
    /// The HTTP status, for ``Code/httpError``.
    public let status: Int?
    /// The service's error code (`key_not_found`, `counter_not_increasing`, ...), when the body carried one.
    public let serviceCode: String?
    /// The device's error, for ``Code/device`` and ``Code/unavailable``.
    public let deviceError: DeviceServiceError?
    /// The Keychain's `OSStatus`, for ``Code/keyStore``.
    public let osStatus: Int32?
    /// When App Attest will be tried again, for ``Code/unavailable`` and ``Code/attestationDeferred``.
    public let retryAfter: Date?
    /// A human-readable reason (the service's message for ``Code/httpError``).
    public let reason: String
    /// The answer's `Retry-After` in seconds, for ``Code/httpError`` (the integer form only).
    var retryAfterSeconds: Int?

    /// Creates an error.
    public init(
        _ code: Code, status: Int? = nil, serviceCode: String? = nil, deviceError: DeviceServiceError? = nil,
        osStatus: Int32? = nil, retryAfter: Date? = nil, reason: String
    ) {
        self.code = code
        self.status = status
        self.serviceCode = serviceCode
        self.deviceError = deviceError
        self.osStatus = osStatus
        self.retryAfter = retryAfter
        self.reason = reason
    }

    /// `code (status service_code): reason`.
    public var description: String {
        var text = code.description
        if let status { text += " (\(status)\(serviceCode.map { " \($0)" } ?? ""))" }
        if let deviceError { text += " (\(deviceError))" }
        return text + ": " + reason
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: AttestKitClientError, rhs: AttestKitClientError) -> Bool { lhs.code == rhs.code }

    /// Hashes the code.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// The AttestKit verification refusal this answer is, if its status and code are exactly one of them.
    public var verificationRefusal: VerificationRefusal? {
        guard code == .httpError, let status, let serviceCode,
            let refusal = VerificationRefusal(rawValue: serviceCode), refusal.status == status
        else { return nil }
        return refusal
    }

    /// The service's code for a deferred attestation (its ramp), answered with 429 and `Retry-After`.
    static let attestationDeferredServiceCode = "attestation_deferred"

    /// Whether this is the service deferring an attestation: exactly 429 `attestation_deferred`.
    var isAttestationDeferral: Bool {
        code == .httpError && status == 429 && serviceCode == Self.attestationDeferredServiceCode
    }

    /// Whether the failure is passing: the network, the service's 5xx or 429, a device backing off, or a status
    /// without the service's error body (a proxy, a firewall or a captive portal answered, not the service's
    /// verification). A registration that failed so is retried later with the same attestation.
    var isTransient: Bool {
        switch code {
        case .transport, .unavailable: true
        case .httpError: serviceCode == nil || (status.map { $0 >= 500 || $0 == 429 || $0 == 408 } ?? true)
        case .invalidResponse: true
        default: false
        }
    }

    /// This passing failure as ``Code/unavailable``, keeping its status and service code: for a step whose
    /// caller falls back or backs off.
    func unavailable(_ reason: String) -> AttestKitClientError {
        AttestKitClientError(
            .unavailable, status: status, serviceCode: serviceCode, deviceError: deviceError,
            reason: "\(reason): \(self)")
    }

    /// Wraps any error of the system (the key store's, `URLError`, ...) with `code`, keeping this type as it is.
    static func wrapping(_ error: any Error, as code: Code, _ reason: String) -> AttestKitClientError {
        if let error = error as? AttestKitClientError { return error }
        if let error = error as? DeviceServiceError {
            return AttestKitClientError(.device, deviceError: error, reason: "\(reason): \(error)")
        }
        return AttestKitClientError(code, reason: "\(reason): \(type(of: error))")
    }
}
