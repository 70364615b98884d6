public import Foundation

/// The DeviceCheck capability of a device: what `DCDevice` offers.
///
/// The token identifies the device to the app's server without identifying the user. The server checks a request's
/// token with the AttestKit middleware, or passes the request to the AttestKit service's `POST /v1/requests/verify`:
/// both validate it with Apple and use it up (`POST /v1/devicecheck/validate` uses nothing up, so a replayed token
/// passes it again: it is no check of a request). It reads and sets the device's two bits with
/// `POST /v1/devicecheck/query` and `/update`.
public protocol DeviceCheckTokenProvider: Sendable {
    /// Whether DeviceCheck is available on this device (`DCDevice.current.isSupported`).
    var isSupported: Bool { get }

    /// Generates an ephemeral device token.
    func generateToken() async throws -> Data
}
