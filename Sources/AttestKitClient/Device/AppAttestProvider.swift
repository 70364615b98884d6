public import Foundation

/// The App Attest capabilities of a device: what `DCAppAttestService` offers.
///
/// ``AppAttestManager`` drives a provider; on Apple platforms use `DeviceAppAttestProvider` (over
/// `DCAppAttestService.shared`), elsewhere (Linux, tests, debug builds) the `SimulatedAppAttestProvider` of the
/// separate `AttestKitClientSimulator` product.
///
/// Implementations report failures as ``DeviceServiceError`` so that the manager can tell a key the device no
/// longer knows (``DeviceServiceError/invalidKey``) from a service that is temporarily unavailable
/// (``DeviceServiceError/serverUnavailable``).
public protocol AppAttestProvider: Sendable {
    /// Whether App Attest is available on this device (`DCAppAttestService.isSupported`).
    var isSupported: Bool { get }

    /// Generates a new key pair in the Secure Enclave and returns its key identifier (Base64).
    func generateKey() async throws -> String

    /// Attests the key `keyID` with Apple; returns the attestation object.
    ///
    /// - Parameters:
    ///   - keyID: A key from ``generateKey()`` that was never attested.
    ///   - clientDataHash: SHA-256 of the server's challenge.
    func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data

    /// Signs `clientDataHash` with the attested key `keyID`; returns the assertion object.
    func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data
}
