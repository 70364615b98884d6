import AttestKit

extension FlowError.Code {
    /// A request field is missing, malformed or contradicts another (`invalid_field`).
    public static let invalidField = FlowError.Code("invalid_field")
    /// A key identifier that is not Base64 of 32 bytes (`key_id_malformed`, AttestKit's code).
    public static let keyIdMalformed = FlowError.Code("key_id_malformed")
    /// The freshness of a binding is malformed or names no challenge of this service (`invalid_freshness`).
    public static let invalidFreshness = FlowError.Code("invalid_freshness")
    /// Client data that claims AttestKit's canonical format but is not canonical (`client_data_malformed`).
    public static let clientDataMalformed = FlowError.Code("client_data_malformed")
    /// A timestamp freshness outside the accepted window (`timestamp_outside_window`).
    public static let timestampOutsideWindow = FlowError.Code("timestamp_outside_window")
    /// A request without the assertion headers (`assertion_required`).
    public static let assertionRequired = FlowError.Code("assertion_required")
    /// An assertion header sent more than once (`header_repeated`).
    public static let headerRepeated = FlowError.Code("header_repeated")
    /// No app is configured, so no attestation can be accepted (`apps_not_configured`).
    public static let appsNotConfigured = FlowError.Code("apps_not_configured")
    /// An attestation whose validation category the deployment does not allow (`policy_validation_category`).
    public static let policyValidationCategory = FlowError.Code(AttestKitError.Code.policyValidationCategory.rawValue)
    /// An attestation whose OS version is below the deployment's minimum (`policy_os_version`).
    public static let policyOSVersion = FlowError.Code(AttestKitError.Code.policyOSVersion.rawValue)
    /// A key of a macOS App ID without Apple's macOS access policy (`policy_key_access_control`).
    public static let policyKeyAccessControl = FlowError.Code(AttestKitError.Code.policyKeyAccessControl.rawValue)
    /// A request body over the edge's limit (`payload_too_large`).
    public static let payloadTooLarge = FlowError.Code("payload_too_large")
    /// A spent request budget (`rate_limited`).
    public static let rateLimited = FlowError.Code("rate_limited")
    /// No key has the identifier (`key_not_found`, the store's code).
    public static let keyNotFound = FlowError.Code("key_not_found")
    /// A bug (`internal_error`).
    public static let internalError = FlowError.Code("internal_error")
}

extension FlowError {
    /// A timestamp outside the window, for `#expect(throws:)` and comparisons.
    public static let timestampOutsideWindow = FlowError(
        .timestampOutsideWindow, .refused, "the timestamp is outside the accepted window")
    /// A request without the assertion headers, for comparisons.
    public static let assertionRequired = FlowError(
        .assertionRequired, .unauthenticated, "the request carries no assertion")
    /// A request body over the edge's limit (413), for comparisons and for an unenforced request's refusal.
    public static let payloadTooLarge = FlowError(.payloadTooLarge, .tooLarge, "the body is over the limit")
    /// No app is configured.
    public static let appsNotConfigured = FlowError(
        .appsNotConfigured, .notConfigured,
        "no app is configured (apps: TEAMID.bundle.id); attestations cannot be accepted")

    /// 400 `invalid_field`, naming the field: `field: message`.
    public static func invalidField(
        _ field: String, _ message: String, file: String = #fileID, line: UInt = #line
    ) -> FlowError {
        FlowError(.invalidField, .malformed, "\(field): \(message)", file: file, line: line)
    }

    /// 429 `rate_limited`: the budget `name` is spent for `retryAfter` seconds.
    public static func rateLimited(_ name: String, retryAfter: Int) -> FlowError {
        FlowError(.rateLimited, .rateLimited(retryAfter: retryAfter), "too many requests (\(name)); retry later")
    }

    /// A bounded label of the error for metrics and logs: its code.
    public var shortDescription: String { code.rawValue }
}
