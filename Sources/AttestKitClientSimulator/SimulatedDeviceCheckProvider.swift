public import AttestKitClient
public import Foundation

/// `DeviceCheckTokenProvider` in software: random opaque tokens, well-formed for the mock of
/// Apple's DeviceCheck service in AttestKitAppleMock (which accepts any non-empty token; Apple would not).
///
/// **For Linux, tests and debug builds only**, like ``SimulatedAppAttestProvider``: it is in the separate
/// `AttestKitClientSimulator` product so that a release app never links it.
public final class SimulatedDeviceCheckProvider: DeviceCheckTokenProvider, Sendable {
    private let supported: Locked<Bool>
    private let generated = Locked(0)
    private let failures = Locked(0)

    /// Creates a provider.
    /// - Parameter supported: Whether DeviceCheck is supported; `false` simulates a device without it.
    public init(supported: Bool = true) { self.supported = Locked(supported) }

    /// Whether DeviceCheck is supported (settable).
    public var isSupported: Bool {
        get { supported.withLock { $0 } }
        set { supported.withLock { $0 = newValue } }
    }

    /// How many tokens were generated.
    public var tokenCount: Int { generated.withLock { $0 } }

    /// Makes the next `count` calls throw `DeviceServiceError.serverUnavailable`.
    public func failNextCalls(_ count: Int) { failures.withLock { $0 = count } }

    /// A fresh random 64-byte token.
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
        var generator = SystemRandomNumberGenerator()
        return Data((0..<64).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}
