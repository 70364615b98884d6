/// `POST /v1/devicecheck/query` and `POST /v1/devicecheck/validate` request.
public struct DeviceTokenRequest: Codable, Sendable, Hashable {
    /// The DeviceCheck token from `DCDevice.generateToken`, Base64.
    public var deviceToken: String

    /// Creates a request.
    public init(deviceToken: String) {
        self.deviceToken = deviceToken
    }
}

extension DeviceTokenRequest: CustomStringConvertible, CustomReflectable {
    /// Never the DeviceCheck token: printing or logging the message shows no secret.
    public var description: String { "DeviceTokenRequest()" }

    /// No children: the DeviceCheck token is a secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
