import AttestKit
public import AttestKitClient
public import AttestKitTesting
public import Foundation

/// `AppAttestProvider` over a `SimulatedDevice` of AttestKitTesting: App Attest in software,
/// certified by a software Apple.
///
/// **For Linux, tests and debug builds only.** It lives in the separate `AttestKitClientSimulator` product so
/// that a release app, which links only `AttestKitClient`, never contains the software Apple; in an iOS app,
/// add this product to a test or debug target only, and use `DeviceAppAttestProvider` otherwise. A service
/// accepts its attestations only when told to trust the software Apple's root (`attestkit serve
/// --trust-attestation-root`), which a production service never is.
///
/// Besides the device's behaviour it simulates what a real device does rarely: App Attest being unsupported
/// (``isSupported``), a key the OS no longer knows (``invalidate(_:)``), and a key whose counter went back, as
/// after restoring a backup (``restoreCounter(_:for:)``).
public final class SimulatedAppAttestProvider: AppAttestProvider, Sendable {
    /// The simulated device.
    public let device: SimulatedDevice
    private let state: Locked<State>

    private struct State {
        var supported: Bool
        /// Keyed by the decoded identifier: any Base64 spelling of a forgotten key is refused.
        var invalidated: Set<KeyID> = []
        var unavailableCalls = 0
        var failures: [Call: (error: DeviceServiceError, remaining: Int)] = [:]
        var attestedHashes: [String: [Data]] = [:]
        var calls = Calls()
    }

    /// One of the device's App Attest calls.
    public enum Call: Sendable, Hashable, CaseIterable {
        /// ``SimulatedAppAttestProvider/generateKey()``.
        case generateKey
        /// ``SimulatedAppAttestProvider/attestKey(_:clientDataHash:)``.
        case attestKey
        /// ``SimulatedAppAttestProvider/generateAssertion(_:clientDataHash:)``.
        case generateAssertion
    }

    /// How many times each call was made.
    public struct Calls: Sendable, Hashable {
        /// ``generateKey()`` calls.
        public var generateKey = 0
        /// ``attestKey(_:clientDataHash:)`` calls.
        public var attestKey = 0
        /// ``generateAssertion(_:clientDataHash:)`` calls.
        public var generateAssertion = 0

        /// No calls.
        public init() {}
    }

    /// Creates a provider over `device`.
    /// - Parameters:
    ///   - device: The simulated device.
    ///   - supported: Whether App Attest is supported; `false` simulates a device without it.
    public init(device: SimulatedDevice, supported: Bool = true) {
        self.device = device
        self.state = Locked(State(supported: supported))
    }

    /// Whether App Attest is supported (settable to simulate a device without it).
    public var isSupported: Bool {
        get { state.withLock { $0.supported } }
        set { state.withLock { $0.supported = newValue } }
    }

    /// How many times each call was made.
    public var calls: Calls { state.withLock { $0.calls } }

    /// Makes the device forget `keyID`: every later call with it throws `DeviceServiceError.invalidKey`, as
    /// after the app is reinstalled or the key store is reset, whatever Base64 spelling names it (standard or
    /// base64url, padded or not). A `keyID` that is not a key identifier names no key: calls with it fail anyway.
    public func invalidate(_ keyID: String) {
        guard let key = try? KeyID(string: keyID) else { return }
        state.withLock { _ = $0.invalidated.insert(key) }
    }

    /// Sets the counter of `keyID` back to `counter`, as restoring an old backup of the device would.
    /// - Throws: `SoftwareAppleError` for an unknown key.
    public func restoreCounter(_ counter: UInt32, for keyID: String) throws {
        try device.setCounter(counter, for: KeyID(string: keyID))
    }

    /// The counter of `keyID`'s last assertion, or `nil` for an unknown key.
    public func counter(for keyID: String) -> UInt32? {
        (try? KeyID(string: keyID)).flatMap { device.counter(for: $0) }
    }

    /// Makes the next `count` device calls throw `DeviceServiceError.serverUnavailable`.
    public func failNextCalls(_ count: Int) {
        state.withLock { $0.unavailableCalls = count }
    }

    /// Makes the next `count` calls of `call` throw `error` (`Int.max`: until ``stopFailing(_:)``), as Apple's
    /// service being down (`serverUnavailable`) or an app extension without App Attest (`featureUnsupported`)
    /// would.
    public func fail(_ call: Call, with error: DeviceServiceError, times count: Int = .max) {
        state.withLock { $0.failures[call] = (error, count) }
    }

    /// Ends the failures of `call`.
    public func stopFailing(_ call: Call) {
        state.withLock { $0.failures[call] = nil }
    }

    /// The client data hashes `attestKey` was called with for `keyID`, in order (successful or not).
    public func attestationHashes(for keyID: String) -> [Data] {
        state.withLock { $0.attestedHashes[keyID] ?? [] }
    }

    /// Generates a key on the simulated device.
    public func generateKey() async throws -> String {
        try check(nil, .generateKey) { $0.generateKey += 1 }
        return device.generateKey().base64
    }

    /// Attests `keyID` on the simulated device.
    public func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
        state.withLock { $0.attestedHashes[keyID, default: []].append(clientDataHash) }
        try check(keyID, .attestKey) { $0.attestKey += 1 }
        return try Self.mapped { try device.attestKey(Self.keyID(keyID), clientDataHash: Array(clientDataHash)) }
    }

    /// Signs an assertion with `keyID` on the simulated device.
    public func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
        try check(keyID, .generateAssertion) { $0.generateAssertion += 1 }
        return try Self.mapped {
            try device.generateAssertion(Self.keyID(keyID), clientDataHash: Array(clientDataHash))
        }
    }

    private func check(_ keyID: String?, _ call: Call, count: (inout Calls) -> Void) throws {
        let failure: DeviceServiceError? = state.withLock { state in
            count(&state.calls)
            guard state.supported else { return .featureUnsupported }
            if let failure = state.failures[call], failure.remaining > 0 {
                if failure.remaining != .max { state.failures[call]?.remaining -= 1 }
                return failure.error
            }
            if state.unavailableCalls > 0 {
                state.unavailableCalls -= 1
                return .serverUnavailable
            }
            if let keyID, let key = try? KeyID(string: keyID), state.invalidated.contains(key) { return .invalidKey }
            return nil
        }
        if let failure { throw failure }
    }

    private static func keyID(_ text: String) throws(DeviceServiceError) -> KeyID {
        do { return try KeyID(string: text) } catch { throw .invalidKey }
    }

    private static func mapped(_ body: () throws -> [UInt8]) throws(DeviceServiceError) -> Data {
        do {
            return Data(try body())
        } catch let error as DeviceServiceError {
            throw error
        } catch let error as SoftwareAppleError {
            switch error.code {
            case .invalidKey: throw .invalidKey
            case .invalidInput: throw .invalidInput
            default: throw .unknown
            }
        } catch {
            throw .unknown
        }
    }
}
