/// `POST /v1/devicecheck/validate` answer.
public struct DeviceCheckValidateResponse: Codable, Sendable, Hashable {
    /// Whether Apple accepted the token.
    public var valid: Bool
    /// Why Apple rejected it; absent when valid.
    public var reason: String?

    /// Creates an answer.
    public init(valid: Bool, reason: String? = nil) {
        self.valid = valid
        self.reason = reason
    }
}
