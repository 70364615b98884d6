/// `POST /v1/devicecheck/query` answer.
public struct DeviceCheckQueryResponse: Codable, Sendable, Hashable {
    /// `false` when the device's bits were never set.
    public var found: Bool
    /// Bit 0.
    public var bit0: Bool
    /// Bit 1.
    public var bit1: Bool
    /// The month of the last update, `YYYY-MM`; absent when never set.
    public var lastUpdateTime: String?
    /// The deployment's name for the bits' state; absent when no names are configured.
    public var state: String?

    /// Creates an answer.
    public init(found: Bool, bit0: Bool, bit1: Bool, lastUpdateTime: String? = nil, state: String? = nil) {
        self.found = found
        self.bit0 = bit0
        self.bit1 = bit1
        self.lastUpdateTime = lastUpdateTime
        self.state = state
    }
}
