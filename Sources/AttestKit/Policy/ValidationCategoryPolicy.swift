/// Accepts attestations whose iOS 27 validation category is one of ``allowed``; an attestation without a category
/// fails it (``AttestKitError/Code/policyValidationCategory``).
public struct ValidationCategoryPolicy: AttestationPolicy, Hashable {
    /// The categories accepted.
    public let allowed: Set<UInt32>

    /// A policy accepting the categories in `allowed`.
    ///
    /// - Parameter allowed: The categories accepted.
    public init(allowed: Set<UInt32>) { self.allowed = allowed }

    /// Met when the attestation's category is allowed.
    ///
    /// - Parameter attestation: An attestation that passed Apple's checks.
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_validation_category`.
    public func check(_ attestation: VerifiedAttestation) -> PolicyResult {
        if let category = attestation.validationCategory, allowed.contains(category) { return .meetsPolicy }
        let shown = attestation.validationCategory.map(String.init) ?? "none"
        return .failsToMeetPolicy(
            PolicyFailureReason(
                .policyValidationCategory, "the validation category \(shown) is not allowed by this deployment"))
    }
}
