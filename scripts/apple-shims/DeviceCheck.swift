// A test-only shim of the parts of Apple's DeviceCheck framework that AttestKitClient uses, written from Apple's
// documentation with its availability, so that scripts/apple-api-check can type-check the client's
// `#if canImport(DeviceCheck)` code on Linux, where there is no Apple SDK. Never linked into anything: the
// declarations only have to match Apple's in name, type and availability; the bodies are placeholders.
import Foundation

/// `DCError`: the errors of DeviceCheck and App Attest.
@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
public struct DCError: Error, Hashable, Sendable {
    /// `DCError.Code`.
    public enum Code: Int, Sendable {
        case unknownSystemFailure = 0
        case featureUnsupported = 1
        @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *) case invalidInput = 2
        @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *) case invalidKey = 3
        @available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *) case serverUnavailable = 4
    }

    public let code: Code
    public init(_ code: Code) { self.code = code }
}

/// `DCAppAttestService`: App Attest.
@available(iOS 14.0, macOS 11.0, tvOS 15.0, watchOS 9.0, *)
public final class DCAppAttestService: @unchecked Sendable {
    public class var shared: DCAppAttestService { DCAppAttestService() }
    public var isSupported: Bool { false }
    public func generateKey() async throws -> String { throw DCError(.featureUnsupported) }
    public func attestKey(_ keyId: String, clientDataHash: Data) async throws -> Data {
        throw DCError(.featureUnsupported)
    }
    public func generateAssertion(_ keyId: String, clientDataHash: Data) async throws -> Data {
        throw DCError(.featureUnsupported)
    }
}

/// `DCDevice`: DeviceCheck tokens.
@available(iOS 11.0, macOS 10.15, tvOS 11.0, watchOS 9.0, *)
public final class DCDevice: @unchecked Sendable {
    public class var current: DCDevice { DCDevice() }
    public var isSupported: Bool { false }
    public func generateToken() async throws -> Data { throw DCError(.featureUnsupported) }
}
