/// The four endpoints the mock serves, as Apple's services have them.
public enum MockAppleEndpoint: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// DeviceCheck `POST /v1/query_two_bits`.
    case queryTwoBits = "query"
    /// DeviceCheck `POST /v1/update_two_bits`.
    case updateTwoBits = "update"
    /// DeviceCheck `POST /v1/validate_device_token`.
    case validateDeviceToken = "validate"
    /// App Attest `POST /v1/attestationData`, the receipt exchange.
    case attestationData = "receipt"

    /// The path Apple serves it at.
    public var path: String {
        switch self {
        case .queryTwoBits: "/v1/query_two_bits"
        case .updateTwoBits: "/v1/update_two_bits"
        case .validateDeviceToken: "/v1/validate_device_token"
        case .attestationData: "/v1/attestationData"
        }
    }

    /// Whether it belongs to DeviceCheck (`Bearer` tokens, JSON bodies) rather than the receipt exchange.
    public var isDeviceCheck: Bool { self != .attestationData }

    /// The short name the command line uses: `query`, `update`, `validate` or `receipt`.
    public var description: String { rawValue }
}
