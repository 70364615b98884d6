/// Accepts attestations and assertions whose iOS 27 validation category is one of ``allowed``; one that reports no
/// category (a device before iOS 27) meets it only with ``allowsUnreported``
/// (``AttestKitError/Code/policyValidationCategory``).
///
/// The same value is checked at registration (``AttestationPolicy``) and at every assertion (``AssertionPolicy``):
/// a key registered from an allowed build that later asserts from a build of another category fails it then.
public struct ValidationCategoryPolicy: AttestationPolicy, AssertionPolicy, Hashable {
    /// The categories accepted (numbers; ``ValidationCategory`` names them).
    public let allowed: Set<UInt32>
    /// Whether a device that reports no category (before iOS 27) is accepted.
    public let allowsUnreported: Bool

    /// A policy accepting the categories in `allowed`, and devices that report none when `allowsUnreported`.
    ///
    /// - Parameters:
    ///   - allowed: The categories accepted; empty accepts none (then only unreported ones, if allowed).
    ///   - allowsUnreported: Whether a device that reports no category is accepted; `false` by default.
    public init(allowed: Set<UInt32>, allowsUnreported: Bool = false) {
        self.allowed = allowed
        self.allowsUnreported = allowsUnreported
    }

    /// Met when `category` is allowed, or absent while ``allowsUnreported``.
    ///
    /// - Parameter category: The category the device reported, `nil` for none.
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_validation_category`.
    public func check(category: UInt32?) -> PolicyResult {
        guard let category else {
            if allowsUnreported { return .meetsPolicy }
            return .failsToMeetPolicy(
                PolicyFailureReason(
                    .policyValidationCategory,
                    "the device reports no validation category (before iOS 27) and this deployment requires one"))
        }
        if allowed.contains(category) { return .meetsPolicy }
        return .failsToMeetPolicy(
            PolicyFailureReason(
                .policyValidationCategory,
                "the validation category \(ValidationCategory(category)) is not allowed by this deployment"))
    }

    /// Met when the attestation's category is allowed.
    ///
    /// - Parameter attestation: An attestation that passed Apple's checks.
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_validation_category`.
    public func check(_ attestation: VerifiedAttestation) -> PolicyResult {
        check(category: attestation.validationCategory)
    }

    /// Met when the assertion's category is allowed.
    ///
    /// - Parameters:
    ///   - assertion: An assertion whose signature and counter verified.
    ///   - key: Its key: one attested without the iOS 27 map reports none at its assertions
    ///     (``VerifiedAssertion/reported(for:)``).
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_validation_category`.
    public func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult {
        check(category: assertion.reported(for: key).validationCategory)
    }
}
