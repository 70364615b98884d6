/// `POST /v1/devicecheck/query` and `/validate` request.
struct DeviceTokenRequest: Decodable {
    var deviceToken: String
}

/// `POST /v1/devicecheck/update` request.
struct DeviceCheckUpdateRequest: Decodable {
    var deviceToken: String
    var bit0: Bool?
    var bit1: Bool?
    /// A configured state name, instead of the bits.
    var state: String?
}

/// `POST /v1/devicecheck/query` answer.
struct DeviceCheckQueryResponse: Encodable {
    var found: Bool
    var bit0: Bool
    var bit1: Bool
    var lastUpdateTime: String?
    /// The configured name of the bits' state.
    var state: String?
}

/// `POST /v1/devicecheck/update` answer.
struct DeviceCheckUpdateResponse: Encodable {
    var updated: Bool
}

/// `POST /v1/devicecheck/validate` answer.
struct DeviceCheckValidateResponse: Encodable {
    var valid: Bool
    var reason: String?
}
