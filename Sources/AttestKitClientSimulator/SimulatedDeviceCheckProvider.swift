public import AttestKitClient
import AttestKitTesting
public import Foundation

/// `DeviceCheckTokenProvider` in software: a new token for every call, as on a device, each naming this simulated
/// device (`SimulatedDeviceToken`), so that the mock of Apple's DeviceCheck service in AttestKitAppleMock keeps one
/// device's two bits across its tokens, as Apple does (the mock accepts any well-formed token; Apple would not).
///
/// **For Linux, tests and debug builds only**, like ``SimulatedAppAttestProvider``: it is in the separate
/// `AttestKitClientSimulator` product so that a release app never links it.
public final class SimulatedDeviceCheckProvider: DeviceCheckTokenProvider, Sendable {
    private let supported: Locked<Bool>
    private let generated = Locked(0)
    private let failures = Locked(0)

    /// The device's identifier, which each of its tokens names (16 bytes).
    public let deviceID: [UInt8]

    /// Creates a provider.
    /// - Parameters:
    ///   - supported: Whether DeviceCheck is supported; `false` simulates a device without it.
    ///   - deviceID: The device's identifier (16 bytes; longer is cut, shorter padded with zeros); random by default,
    ///     a new device. Two providers with one identifier are one device to the mock.
    public init(supported: Bool = true, deviceID: [UInt8]? = nil) {
        self.supported = Locked(supported)
        var generator = SystemRandomNumberGenerator()
        let identifier =
            deviceID
            ?? (0..<SimulatedDeviceToken.deviceIDLength).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        self.deviceID = SimulatedDeviceToken.identifier(identifier)
    }

    /// Whether DeviceCheck is supported (settable).
    public var isSupported: Bool {
        get { supported.withLock { $0 } }
        set { supported.withLock { $0 = newValue } }
    }

    /// How many tokens were generated.
    public var tokenCount: Int { generated.withLock { $0 } }

    /// Makes the next `count` calls throw `DeviceServiceError.serverUnavailable`.
    public func failNextCalls(_ count: Int) { failures.withLock { $0 = count } }

    /// A new 64-byte token of this device (`SimulatedDeviceToken`): its identifier, then random bytes.
    /// - Throws: `DeviceServiceError.featureUnsupported` when not supported,
    ///   `DeviceServiceError.serverUnavailable` while failing.
    public func generateToken() async throws -> Data {
        guard isSupported else { throw DeviceServiceError.featureUnsupported }
        let failing = failures.withLock { count in
            defer { count = max(0, count - 1) }
            return count > 0
        }
        if failing { throw DeviceServiceError.serverUnavailable }
        generated.withLock { $0 += 1 }
        return Data(SimulatedDeviceToken.make(device: deviceID))
    }
}
