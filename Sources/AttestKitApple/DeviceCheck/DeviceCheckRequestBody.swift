import Foundation

/// The JSON body of a DeviceCheck call (docs/apple-formats.md §6): `device_token`, `transaction_id` (a new UUID),
/// `timestamp` in milliseconds since 1970 (UTC), and for updates `bit0` and `bit1` when given (absent otherwise).
struct DeviceCheckRequestBody: Encodable, Sendable {
    var deviceToken: String
    var transactionID: String
    var timestamp: Int64
    var bit0: Bool?
    var bit1: Bool?

    private enum CodingKeys: String, CodingKey {
        case deviceToken = "device_token"
        case transactionID = "transaction_id"
        case timestamp
        case bit0
        case bit1
    }

    /// A body for `deviceToken` sent at `time`, with a new transaction id.
    init(deviceToken: String, at time: Date, bit0: Bool? = nil, bit1: Bool? = nil) {
        self.deviceToken = deviceToken
        self.transactionID = UUID().uuidString
        self.timestamp = Int64((time.timeIntervalSince1970 * 1_000).rounded(.down))
        self.bit0 = bit0
        self.bit1 = bit1
    }

    /// The JSON bytes.
    func encoded() throws(AppleServiceError) -> [UInt8] {
        do {
            return Array(try JSONEncoder().encode(self))
        } catch {
            throw AppleServiceError(.invalidConfiguration, "the DeviceCheck body could not be encoded")
        }
    }
}
