/// `POST /v1/devicecheck/update` request: at least one of the bits, or a configured ``state`` name instead.
public struct DeviceCheckUpdateRequest: Codable, Sendable, Hashable {
    /// The DeviceCheck token from `DCDevice.generateToken`, Base64.
    public var deviceToken: String
    /// The new bit 0.
    public var bit0: Bool?
    /// The new bit 1.
    public var bit1: Bool?
    /// A configured state name, instead of the bits.
    public var state: String?

    /// Creates a request.
    public init(deviceToken: String, bit0: Bool? = nil, bit1: Bool? = nil, state: String? = nil) {
        self.deviceToken = deviceToken
        self.bit0 = bit0
        self.bit1 = bit1
        self.state = state
    }
}

extension DeviceCheckUpdateRequest: CustomStringConvertible, CustomReflectable {
    /// Never the DeviceCheck token: printing or logging the message shows no secret.
    public var description: String {
        "DeviceCheckUpdateRequest(bit0: \(bit0.map(String.init) ?? "unchanged"), bit1: \(bit1.map(String.init) ?? "unchanged"), state: \(state ?? "none"))"
    }

    /// No children: the DeviceCheck token is a secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
