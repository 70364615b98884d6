public import Crypto
public import Foundation

/// A verified attestation: the key to store, and what Apple certified about it.
public struct VerifiedAttestation: Sendable {
    /// The key identifier (SHA-256 of the public key).
    public let keyID: KeyID
    /// The attested P-256 public key, taken from the credential certificate.
    public let publicKey: P256.Signing.PublicKey
    /// The App ID the key belongs to.
    public let appID: AppID
    /// The environment the key was attested in.
    public let environment: AppAttestEnvironment
    /// The verified `ATTEST` receipt, or `nil` when the object had none or receipts are ignored.
    public let receipt: Receipt?
    /// Start of the credential certificate's validity window.
    public let certificateNotBefore: Date
    /// End of the credential certificate's validity window.
    public let certificateNotAfter: Date
    /// OS version from extension 1.2.840.113635.100.8.7, e.g. `"17.4"`.
    public let osVersion: String?
    /// What the credential certificate says about the key's access control (extension 1.2.840.113635.100.8.6):
    /// absent before 2026, the policy the Secure Enclave enforced otherwise, or the raw value when malformed. Only a
    /// policy such as ``MacOSKeyAccessControlPolicy`` refuses a key on it.
    public let keyAccessControl: AppAttestKeyAccessControl.Reading
    /// The parsed authenticator data.
    public let authenticatorData: AuthenticatorData

    /// The public key as the 65-byte X9.63 point `04 ‖ X ‖ Y`, for storage.
    public var publicKeyX963: [UInt8] { Array(publicKey.x963Representation) }
    /// iOS 27+: the bundle version the device reported (`apple_bundle_version_01`).
    public var bundleVersion: String? { authenticatorData.extensions?.bundleVersion }
    /// iOS 27+: the launch validation category (`apple_validation_category_01`).
    public var validationCategory: UInt32? { authenticatorData.extensions?.validationCategory }
    /// The sign counter after attestation: always 0.
    public var counter: UInt32 { authenticatorData.signCount }
}
