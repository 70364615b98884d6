/// Accepts attestations and assertions of app builds at ``minimum`` or a later bundle version (iOS 27's
/// `apple_bundle_version_01`, ordered as ``BundleVersion``): the way to make old builds upgrade
/// (``AttestKitError/Code/policyBundleVersion``).
///
/// It fails closed: a bundle version that is not dot-separated integers (`1.0b3`) fails it, and so does a device
/// that reports none (before iOS 27) unless ``allowsUnreported``. The same value is checked at registration and at
/// every assertion.
public struct MinimumBundleVersionPolicy: AttestationPolicy, AssertionPolicy, Hashable {
    /// The lowest bundle version accepted.
    public let minimum: BundleVersion
    /// Whether a device that reports no bundle version (before iOS 27) is accepted.
    public let allowsUnreported: Bool

    /// A policy requiring `minimum`.
    ///
    /// - Parameters:
    ///   - minimum: The lowest bundle version accepted.
    ///   - allowsUnreported: Whether a device that reports no bundle version is accepted; `false` by default.
    public init(_ minimum: BundleVersion, allowsUnreported: Bool = false) {
        self.minimum = minimum
        self.allowsUnreported = allowsUnreported
    }

    /// Met when `bundleVersion` parses and is at least ``minimum``, or is absent while ``allowsUnreported``.
    ///
    /// - Parameter bundleVersion: The bundle version the device reported, `nil` for none.
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_bundle_version`.
    public func check(bundleVersion: String?) -> PolicyResult {
        guard let bundleVersion else {
            if allowsUnreported { return .meetsPolicy }
            return .failsToMeetPolicy(
                PolicyFailureReason(
                    .policyBundleVersion,
                    "the device reports no bundle version (before iOS 27); the minimum is \(minimum)"))
        }
        guard let version = BundleVersion(bundleVersion) else {
            return .failsToMeetPolicy(
                PolicyFailureReason(
                    .policyBundleVersion, "the bundle version is not dot-separated integers; the minimum is \(minimum)")
            )
        }
        guard version >= minimum else {
            return .failsToMeetPolicy(
                PolicyFailureReason(
                    .policyBundleVersion, "the bundle version \(version) is below the minimum \(minimum)"))
        }
        return .meetsPolicy
    }

    /// Met when the attestation's bundle version is at least ``minimum``.
    ///
    /// - Parameter attestation: An attestation that passed Apple's checks.
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_bundle_version`.
    public func check(_ attestation: VerifiedAttestation) -> PolicyResult {
        check(bundleVersion: attestation.bundleVersion)
    }

    /// Met when the assertion's bundle version is at least ``minimum``.
    ///
    /// - Parameters:
    ///   - assertion: An assertion whose signature and counter verified.
    ///   - key: Its key: one attested without the iOS 27 map reports none at its assertions
    ///     (``VerifiedAssertion/reported(for:)``).
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_bundle_version`.
    public func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult {
        check(bundleVersion: assertion.reported(for: key).bundleVersion)
    }
}
