/// The DeviceCheck token of a simulated device: 64 bytes that name the device they come from.
///
/// Apple's device tokens are opaque, and each `generateToken()` returns a new one, but Apple keeps a device's two
/// bits per device: two tokens of one device read the same bits. The software Apple's tokens say which device they
/// come from, so that the mock of Apple's services can do the same: ``prefix`` (8 bytes), the device's identifier
/// (``deviceIDLength`` bytes), then random bytes. Any other token is a device of its own to the mock.
///
/// ```swift
/// let token = SimulatedDeviceToken.make(device: deviceID)        // what the simulated device sends
/// SimulatedDeviceToken.device(of: token) == deviceID              // what the mock keeps the bits by
/// ```
public enum SimulatedDeviceToken {
    /// The first bytes of every simulated token: `AKSIMDC1`.
    public static let prefix: [UInt8] = Array("AKSIMDC1".utf8)
    /// The length of a simulated device's identifier.
    public static let deviceIDLength = 16
    /// The length of a simulated token.
    public static let length = 64

    /// A new token of the device `deviceID` (``deviceIDLength`` bytes; longer is cut, shorter is padded with zeros):
    /// ``prefix``, the identifier, and random bytes from `generator` up to ``length``.
    public static func make(device deviceID: [UInt8], using generator: inout some RandomNumberGenerator) -> [UInt8] {
        let identifier = Self.identifier(deviceID)
        let random = (0..<(length - prefix.count - deviceIDLength)).map { _ in
            UInt8.random(in: .min ... .max, using: &generator)
        }
        return prefix + identifier + random
    }

    /// `deviceID` as a device identifier: its first ``deviceIDLength`` bytes, padded with zeros when shorter.
    public static func identifier(_ deviceID: [UInt8]) -> [UInt8] {
        Array((deviceID + [UInt8](repeating: 0, count: deviceIDLength)).prefix(deviceIDLength))
    }

    /// ``make(device:using:)`` with the system's random number generator.
    public static func make(device deviceID: [UInt8]) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return make(device: deviceID, using: &generator)
    }

    /// The device identifier a simulated token names, or `nil` for any other token (one that is not ``length`` bytes
    /// beginning with ``prefix``).
    public static func device(of token: some Collection<UInt8>) -> [UInt8]? {
        let bytes = Array(token)
        guard bytes.count == length, bytes.starts(with: prefix) else { return nil }
        return Array(bytes[prefix.count..<(prefix.count + deviceIDLength)])
    }
}
