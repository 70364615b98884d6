/// An error of the app-side client: the service or the app's server refused a request, the network failed, or
/// the device could not produce what was asked.
///
/// Errors are equal when their codes are. The text never contains assertions, attestations or tokens.
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
        }

        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The server answered with a status other than 2xx; ``AttestKitClientError/status`` has it and
        /// ``AttestKitClientError/serviceCode`` the service's error code when the body was
        /// `{"error": {"code", "message"}}`.
        public static let httpError = Code(.httpError)
        /// The request could not be sent or no answer arrived.
        public static let transport = Code(.transport)
        /// The answer was not what the service's API promises.
        public static let invalidResponse = Code(.invalidResponse)
        /// The request cannot be signed: no URL, a streamed body, or a target the binding cannot express.
        public static let invalidRequest = Code(.invalidRequest)
        /// The device failed; ``AttestKitClientError/deviceError`` says how.
        public static let device = Code(.device)
        /// Neither App Attest nor DeviceCheck is available for the chosen strategy.
        public static let unsupported = Code(.unsupported)

        /// The snake_case name.
        public var description: String { value.rawValue }
    }

    /// The code.
    public let code: Code
    /// The HTTP status, for ``Code/httpError``.
    public let status: Int?
    /// The service's error code (`key_not_found`, `counter_not_increasing`, ...), when the body carried one.
    public let serviceCode: String?
    /// The device's error, for ``Code/device``.
    public let deviceError: DeviceServiceError?
    /// A human-readable reason (the service's message for ``Code/httpError``).
    public let reason: String

    /// Creates an error.
    public init(
        _ code: Code, status: Int? = nil, serviceCode: String? = nil, deviceError: DeviceServiceError? = nil,
        reason: String
    ) {
        self.code = code
        self.status = status
        self.serviceCode = serviceCode
        self.deviceError = deviceError
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

    /// Whether the answer says the service may no longer accept the key: it is unknown (`key_not_found`), revoked
    /// (`key_revoked`), or its counter was not above the last one the service saw (`counter_not_increasing`:
    /// either a later assertion overtook this one, or the device's counter went back, as after restoring a
    /// backup; ``AttestKitHTTPClient`` tells them apart before it replaces the key).
    public var invalidatesKey: Bool {
        guard code == .httpError, let serviceCode else { return false }
        switch (status, serviceCode) {
        case (403, "key_not_found"), (403, "key_revoked"), (404, "key_not_found"), (409, "counter_not_increasing"):
            return true
        default:
            return false
        }
    }
}
