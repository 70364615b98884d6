public import AttestKit

/// A deployment's policy: which attestations it accepts beyond Apple's checks, and when a key's risk asks for
/// step-up. `ServerConfiguration.Policy` of the HTTP service is this type.
///
/// ``attestationPolicy`` composes the attestation rules with AttestKit's `AttestationPolicyBuilder`: the validation
/// category first, then the minimum OS version; give it to the `AttestationVerifier`, which checks it right after
/// Apple's checks (the service and the Vapor integration do). ``riskPolicy`` is applied to accepted assertions.
public struct DeploymentPolicy: Sendable, Hashable {
    /// The iOS 27 validation categories accepted; `nil` accepts any (and attestations without one).
    public var allowedValidationCategories: Set<UInt32>?
    /// The lowest OS version accepted (dotted, `17.4`); `nil` accepts any. An attestation without an OS
    /// version is refused when this is set.
    public var minimumOSVersion: String?
    /// The App IDs of the deployment's macOS apps, whose keys must carry the access policy Apple documents for macOS
    /// keys (AttestKit's `MacOSKeyAccessControlPolicy`); empty (the default) checks no key.
    public var macOSAppIDs: Set<AppID>
    /// A receipt's risk metric above this marks the key for step-up; `nil` never does.
    public var riskMetricThreshold: Int?
    /// Whether a key whose risk is still unknown (its receipt not yet traded with Apple) is marked for step-up.
    public var stepUpWhileRiskUnknown: Bool

    /// Creates a policy.
    public init(
        allowedValidationCategories: Set<UInt32>? = nil,
        minimumOSVersion: String? = nil,
        macOSAppIDs: Set<AppID> = [],
        riskMetricThreshold: Int? = nil,
        stepUpWhileRiskUnknown: Bool = false
    ) {
        self.allowedValidationCategories = allowedValidationCategories
        self.minimumOSVersion = minimumOSVersion
        self.macOSAppIDs = macOSAppIDs
        self.riskMetricThreshold = riskMetricThreshold
        self.stepUpWhileRiskUnknown = stepUpWhileRiskUnknown
    }

    /// The attestation rules of this deployment, composed: AttestKit's `ValidationCategoryPolicy` when categories
    /// are restricted, then its `MinimumOSVersionPolicy` when a (valid) minimum is set, then its
    /// `MacOSKeyAccessControlPolicy` when macOS App IDs are named.
    @AttestationPolicyBuilder public var attestationPolicy: some AttestationPolicy {
        if let allowed = allowedValidationCategories { ValidationCategoryPolicy(allowed: allowed) }
        if let minimum = minimumOSVersion.flatMap({ OSVersion($0) }) { MinimumOSVersionPolicy(minimum) }
        if !macOSAppIDs.isEmpty { MacOSKeyAccessControlPolicy(appIDs: macOSAppIDs) }
    }

    /// When a key's risk asks for step-up.
    public var riskPolicy: RiskPolicy {
        RiskPolicy(threshold: riskMetricThreshold, stepUpWhileUnknown: stepUpWhileRiskUnknown)
    }
}
