public import AttestKit
import Crypto
public import Foundation

/// What a store needs to register a freshly attested key.
///
/// Build one from a `VerifiedAttestation` with ``init(_:receiptRefreshAt:appKey:)``, or from its parts. The
/// initialisers check every field (the public key is a P-256 point whose SHA-256 is the key identifier,
/// versions are short printable text, the receipt is bounded) so nothing malformed reaches a database.
public struct KeyRegistration: Sendable, Hashable {
    /// The key identifier: SHA-256 of ``publicKeyX963``.
    public let keyID: KeyID
    /// The public key as the 65-byte X9.63 point.
    public let publicKeyX963: [UInt8]
    /// The App ID the key was attested for.
    public let appID: AppID
    /// The environment the key was attested in.
    public let environment: AppAttestEnvironment
    /// The attestation's receipt bytes, when it had one.
    public let receipt: [UInt8]?
    /// When Apple created ``receipt``.
    public let receiptCreatedAt: Date?
    /// When the receipt should first be exchanged with Apple, or `nil` for never.
    public let receiptRefreshAt: Date?
    /// When the receipt expires (its field 21), or `nil`: no receipt, or one without an expiration time.
    public let receiptExpiresAt: Date?
    /// The OS version from the attestation.
    public let osVersion: String?
    /// iOS 27+: the bundle version from the authenticator data extensions.
    public let bundleVersion: String?
    /// iOS 27+: the validation category from the authenticator data extensions.
    public let validationCategory: UInt32?
    /// The app key a key attestation bound to this key, when it was registered by one.
    public let appKey: AppKey?
    /// The credential certificate's key access-control extension (1.2.840.113635.100.8.6), its DER value as signed,
    /// well formed or not; `nil` when the certificate has none (keys attested before 2026).
    public let keyAccessControl: [UInt8]?

    /// Creates a registration from its parts.
    ///
    /// - Throws: ``StoreError/Code/invalidInput`` when the public key is not a P-256 point, its SHA-256 is not
    ///   `keyID`, the receipt is empty or over ``StoreLimits/maximumReceiptBytes``, a version string is empty,
    ///   too long or has control characters, a receipt's expiration comes without a receipt, a key access-control
    ///   value is empty or over ``StoreLimits/maximumKeyAccessControlBytes``, or a time is out of range.
    public init(
        keyID: KeyID,
        publicKeyX963: [UInt8],
        appID: AppID,
        environment: AppAttestEnvironment,
        receipt: [UInt8]? = nil,
        receiptCreatedAt: Date? = nil,
        receiptRefreshAt: Date? = nil,
        osVersion: String? = nil,
        bundleVersion: String? = nil,
        validationCategory: UInt32? = nil,
        appKey: AppKey? = nil,
        receiptExpiresAt: Date? = nil,
        keyAccessControl: [UInt8]? = nil
    ) throws(StoreError) {
        guard publicKeyX963.count == 65, publicKeyX963.first == 0x04,
            let key = try? P256.Signing.PublicKey(x963Representation: publicKeyX963)
        else {
            throw StoreError(.invalidInput, "the public key is not a 65-byte X9.63 P-256 point")
        }
        guard KeyID(publicKey: key) == keyID else {
            throw StoreError(.invalidInput, "the key identifier is not SHA-256 of the public key")
        }
        if let receipt { try StoreLimits.checkReceipt(receipt) }
        guard (receipt == nil) == (receiptCreatedAt == nil) else {
            throw StoreError(.invalidInput, "a receipt and its creation time come together")
        }
        guard receipt != nil || receiptExpiresAt == nil else {
            throw StoreError(.invalidInput, "a receipt's expiration time comes with the receipt")
        }
        try StoreLimits.checkVersion(osVersion, "the OS version")
        try StoreLimits.checkVersion(bundleVersion, "the bundle version")
        if let keyAccessControl,
            keyAccessControl.isEmpty || keyAccessControl.count > StoreLimits.maximumKeyAccessControlBytes
        {
            throw StoreError(.invalidInput, "the key access-control value is empty or too long")
        }
        self.keyAccessControl = keyAccessControl
        self.keyID = keyID
        self.publicKeyX963 = publicKeyX963
        self.appID = appID
        self.environment = environment
        self.receipt = receipt
        self.receiptCreatedAt = try StoreTime.normalized(ifPresent: receiptCreatedAt, "receiptCreatedAt")
        self.receiptRefreshAt = try StoreTime.normalized(ifPresent: receiptRefreshAt, "receiptRefreshAt")
        self.receiptExpiresAt = try StoreTime.normalized(ifPresent: receiptExpiresAt, "receiptExpiresAt")
        self.osVersion = osVersion
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
        self.appKey = appKey
    }

    /// The registration of a verified attestation, its receipt due for exchange at once, with the app key a key
    /// attestation bound to it.
    /// - Throws: ``StoreError/Code/invalidInput`` as the memberwise initialiser does.
    public init(_ attestation: VerifiedAttestation, appKey: AppKey? = nil) throws(StoreError) {
        try self.init(attestation, receiptRefreshAt: attestation.receipt?.creationTime, appKey: appKey)
    }

    /// The registration of a verified attestation. Its key access control is kept as signed, well formed or not;
    /// a malformed value over ``StoreLimits/maximumKeyAccessControlBytes`` (none has been seen) is not kept.
    ///
    /// - Parameters:
    ///   - attestation: The verifier's result.
    ///   - receiptRefreshAt: When to first exchange the receipt with Apple, or `nil` for never.
    ///   - appKey: The app key a key attestation bound to the key, if any.
    /// - Throws: ``StoreError/Code/invalidInput`` as the memberwise initialiser does.
    public init(_ attestation: VerifiedAttestation, receiptRefreshAt: Date?, appKey: AppKey? = nil) throws(StoreError) {
        try self.init(
            keyID: attestation.keyID,
            publicKeyX963: attestation.publicKeyX963,
            appID: attestation.appID,
            environment: attestation.environment,
            receipt: attestation.receipt?.bytes,
            receiptCreatedAt: attestation.receipt?.creationTime,
            receiptRefreshAt: receiptRefreshAt,
            osVersion: attestation.osVersion,
            bundleVersion: attestation.bundleVersion,
            validationCategory: attestation.validationCategory,
            appKey: appKey,
            receiptExpiresAt: attestation.receipt?.expirationTime,
            keyAccessControl: Self.storedValue(of: attestation.keyAccessControl))
    }

    /// The extension's value as signed, when present and within the limit.
    static func storedValue(of reading: AppAttestKeyAccessControl.Reading) -> [UInt8]? {
        let value: [UInt8]
        switch reading {
        case .absent: return nil
        case .present(let accessControl): value = accessControl.extensionValue
        case .malformed(let extensionValue): value = extensionValue
        }
        guard !value.isEmpty, value.count <= StoreLimits.maximumKeyAccessControlBytes else { return nil }
        return value
    }
}
