/// `POST /v1/devicecheck/query` and `POST /v1/devicecheck/validate` request.
public struct DeviceTokenRequest: Codable, Sendable, Hashable {
    /// The DeviceCheck token from `DCDevice.generateToken`, Base64.
    public var deviceToken: String

    /// Creates a request.
    public init(deviceToken: String) {
        self.deviceToken = deviceToken
    }
}
