public import Foundation

/// The DeviceCheck capability of a device: what `DCDevice` offers.
///
/// The token identifies the device to the app's server without identifying the user; the server forwards it to
/// the AttestKit service (`POST /v1/devicecheck/validate`, `/query`, `/update`), which asks Apple.
public protocol DeviceCheckTokenProvider: Sendable {
    /// Whether DeviceCheck is available on this device (`DCDevice.current.isSupported`).
    var isSupported: Bool { get }

    /// Generates an ephemeral device token.
    func generateToken() async throws -> Data
}
