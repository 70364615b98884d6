public import AttestKit

extension AppAttestEnvironment {
    /// The base URL of Apple's DeviceCheck two-bit API in this environment (docs/apple-formats.md §6):
    /// `https://api.development.devicecheck.apple.com` or `https://api.devicecheck.apple.com`.
    public var deviceCheckBaseURL: String {
        switch self {
        case .development: "https://api.development.devicecheck.apple.com"
        case .production: "https://api.devicecheck.apple.com"
        }
    }

    /// The URL of Apple's App Attest receipt exchange in this environment (docs/apple-formats.md §5):
    /// `https://data-development.appattest.apple.com/v1/attestationData` or
    /// `https://data.appattest.apple.com/v1/attestationData`.
    public var receiptExchangeURL: String {
        switch self {
        case .development: "https://data-development.appattest.apple.com" + Self.receiptExchangePath
        case .production: "https://data.appattest.apple.com" + Self.receiptExchangePath
        }
    }

    /// The path of the receipt exchange endpoint.
    public static let receiptExchangePath = "/v1/attestationData"
}
