public import AttestKit

/// A deployment's policy: which attestations it accepts beyond Apple's checks, and when a key's risk asks for
/// step-up. `ServerConfiguration.Policy` of the HTTP service is this type.
///
/// ``attestationPolicy`` composes the attestation rules with ``AttestationPolicyBuilder``: the validation
/// category first, then the minimum OS version. ``riskPolicy`` is applied to accepted assertions.
public struct DeploymentPolicy: Sendable, Hashable {
    /// The iOS 27 validation categories accepted; `nil` accepts any (and attestations without one).
    public var allowedValidationCategories: Set<UInt32>?
    /// The lowest OS version accepted (dotted, `17.4`); `nil` accepts any. An attestation without an OS
    /// version is refused when this is set.
    public var minimumOSVersion: String?
    /// A receipt's risk metric above this marks the key for step-up; `nil` never does.
    public var riskMetricThreshold: Int?
    /// Whether a key whose risk is still unknown (its receipt not yet traded with Apple) is marked for step-up.
    public var stepUpWhileRiskUnknown: Bool

    /// Creates a policy.
    public init(
        allowedValidationCategories: Set<UInt32>? = nil,
        minimumOSVersion: String? = nil,
        riskMetricThreshold: Int? = nil,
        stepUpWhileRiskUnknown: Bool = false
    ) {
        self.allowedValidationCategories = allowedValidationCategories
        self.minimumOSVersion = minimumOSVersion
        self.riskMetricThreshold = riskMetricThreshold
        self.stepUpWhileRiskUnknown = stepUpWhileRiskUnknown
    }

    /// The attestation rules of this deployment, composed: ``ValidationCategoryPolicy`` when categories are
    /// restricted, then ``MinimumOSVersionPolicy`` when a (valid) minimum is set.
    @AttestationPolicyBuilder public var attestationPolicy: some AttestationPolicy {
        if let allowed = allowedValidationCategories { ValidationCategoryPolicy(allowed: allowed) }
        if let minimum = minimumOSVersion.flatMap({ OSVersion($0) }) { MinimumOSVersionPolicy(minimum) }
    }

    /// When a key's risk asks for step-up.
    public var riskPolicy: RiskPolicy {
        RiskPolicy(threshold: riskMetricThreshold, stepUpWhileUnknown: stepUpWhileRiskUnknown)
    }
}

/// Accepts attestations whose iOS 27 validation category is one of ``allowed``; an attestation without a category
/// fails it (`policy_validation_category`).
public struct ValidationCategoryPolicy: AttestationPolicy, Hashable {
    /// The categories accepted.
    public let allowed: Set<UInt32>

    /// A policy accepting the categories in `allowed`.
    public init(allowed: Set<UInt32>) { self.allowed = allowed }

    /// Met when the attestation's category is allowed.
    public func check(_ attestation: VerifiedAttestation) -> PolicyResult {
        if let category = attestation.validationCategory, allowed.contains(category) { return .meetsPolicy }
        let shown = attestation.validationCategory.map(String.init) ?? "none"
        return .failsToMeetPolicy(
            PolicyFailureReason(
                .policyValidationCategory, "the validation category \(shown) is not allowed by this deployment"))
    }
}

/// Accepts attestations of devices at ``minimum`` or a later OS version; an attestation without an OS version,
/// or with one that does not parse, fails it (`policy_os_version`).
public struct MinimumOSVersionPolicy: AttestationPolicy, Hashable {
    /// The lowest version accepted.
    public let minimum: OSVersion

    /// A policy requiring `minimum`.
    public init(_ minimum: OSVersion) { self.minimum = minimum }

    /// Met when the attestation's OS version is at least ``minimum``.
    public func check(_ attestation: VerifiedAttestation) -> PolicyResult {
        if let text = attestation.osVersion, let version = OSVersion(text), version >= minimum { return .meetsPolicy }
        return .failsToMeetPolicy(
            PolicyFailureReason(
                .policyOSVersion, "the OS version \(attestation.osVersion ?? "unknown") is below the minimum \(minimum)"
            ))
    }
}
