/// `POST /v1/devicecheck/update` answer.
public struct DeviceCheckUpdateResponse: Codable, Sendable, Hashable {
    /// `true`: Apple stored the bits.
    public var updated: Bool

    /// Creates an answer.
    public init(updated: Bool) {
        self.updated = updated
    }
}
