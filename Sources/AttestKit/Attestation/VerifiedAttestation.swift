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
    /// iOS 27+: the bundle version the device reported (`apple_bundle_version_01`), when ``extensionsAuthenticated``.
    public var bundleVersion: String? { extensionsAuthenticated ? authenticatorData.extensions?.bundleVersion : nil }
    /// iOS 27+: the launch validation category (`apple_validation_category_01`), when ``extensionsAuthenticated``.
    public var validationCategory: UInt32? {
        extensionsAuthenticated ? authenticatorData.extensions?.validationCategory : nil
    }
    /// Whether the iOS 27 extension map is the device's: only when a verified ``receipt`` binds the client data hash.
    ///
    /// The map trails the authenticator data without a length or a flag, and Apple signs the authenticator data
    /// followed by the client data hash the app chose, whose length Apple does not fix. An app that passes
    /// `map ‖ hash` as its client data hash on a device before iOS 27 (whose authenticator data has no map) gets a
    /// signature that verifies over `authenticatorData ‖ map` and the real hash: a map of its own choosing. The
    /// embedded receipt's client data hash (field 4) is the hash the device was given, so a verified receipt tells
    /// the two apart; without one (``AttestationVerifier/ReceiptPolicy/ignore``, or
    /// ``AttestationVerifier/ReceiptPolicy/verifyIfPresent`` and none) the map is not reported.
    public var extensionsAuthenticated: Bool { receipt != nil }
    /// The sign counter after attestation: always 0.
    public var counter: UInt32 { authenticatorData.signCount }
}
