public import AttestKit

/// A deployment's policy: which attestations and assertions it accepts beyond Apple's checks, and when a key's risk
/// asks for step-up. `ServerConfiguration.Policy` of the HTTP service is this type.
///
/// ``attestationPolicy`` composes the attestation rules with AttestKit's `AttestationPolicyBuilder`: the validation
/// category first, then the minimum OS version, then the minimum bundle version; give it to the
/// `AttestationVerifier`, which checks it right after Apple's checks (the service and the Vapor integration do).
/// ``assertionPolicy`` runs the same iOS 27 rules (the same policy values) at every assertion, then refuses a
/// change of category since registration; the `AssertionGate` checks it right after the signature and counter,
/// before the challenge is consumed or the counter advanced. ``riskPolicy`` is applied to accepted assertions.
public struct DeploymentPolicy: Sendable, Hashable {
    /// The iOS 27 validation categories accepted (numbers; AttestKit's `ValidationCategory` names them); `nil`
    /// accepts any, and devices that report none (`policy.validation-categories`).
    public var allowedValidationCategories: Set<UInt32>?
    /// Whether a device that reports no iOS 27 data (before iOS 27) is accepted where ``allowedValidationCategories``
    /// or ``minimumBundleVersion`` is set (`unreported` in `policy.validation-categories`). Off, both refuse it.
    public var acceptsUnreported: Bool
    /// The lowest OS version accepted (dotted, `17.4`); `nil` accepts any. An attestation without an OS
    /// version is refused when this is set.
    public var minimumOSVersion: String?
    /// The App IDs of the deployment's macOS apps, whose keys must carry the access policy Apple documents for macOS
    /// keys (AttestKit's `MacOSKeyAccessControlPolicy`); empty (the default) checks no key.
    public var macOSAppIDs: Set<AppID>
    /// The lowest iOS 27 bundle version accepted, at registration and at every assertion
    /// (`policy.minimum-bundle-version`, dot-separated integers ordered as Apple orders `CFBundleVersion`); `nil`
    /// accepts any. A reported version that is not dot-separated integers is refused (fail closed).
    public var minimumBundleVersion: String?
    /// What an assertion whose validation category differs from its key's registration gets
    /// (`policy.validation-category-change`): refused (the default), accepted with step-up, or accepted.
    public var validationCategoryChange: ValidationCategoryChange
    /// Whether an assertion whose validation category differs from its key's registration is refused
    /// (``validationCategoryChange`` is ``ValidationCategoryChange/refuse``); setting `false` allows the change.
    public var refusesValidationCategoryChange: Bool {
        get { validationCategoryChange == .refuse }
        set { validationCategoryChange = newValue ? .refuse : .allow }
    }

    /// What a change of validation category since registration gets (`policy.validation-category-change`).
    public enum ValidationCategoryChange: String, Sendable, Hashable, CaseIterable {
        /// Refused, 403 `policy_validation_category_changed` (the default).
        case refuse
        /// Accepted, with step-up asked for: `AcceptedAssertion.validationCategoryChanged`, `stepUp` and
        /// `validationCategoryChanged` in the answers, so that the backend asks for more (a new login, a second
        /// factor) before a sensitive action.
        case stepUp = "step-up"
        /// Accepted as any other assertion (the category list still applies).
        case allow
    }
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
        stepUpWhileRiskUnknown: Bool = false,
        acceptsUnreported: Bool = false,
        minimumBundleVersion: String? = nil,
        refusesValidationCategoryChange: Bool = true,
        validationCategoryChange: ValidationCategoryChange? = nil
    ) {
        self.allowedValidationCategories = allowedValidationCategories
        self.minimumOSVersion = minimumOSVersion
        self.macOSAppIDs = macOSAppIDs
        self.riskMetricThreshold = riskMetricThreshold
        self.stepUpWhileRiskUnknown = stepUpWhileRiskUnknown
        self.acceptsUnreported = acceptsUnreported
        self.minimumBundleVersion = minimumBundleVersion
        self.validationCategoryChange = validationCategoryChange ?? (refusesValidationCategoryChange ? .refuse : .allow)
    }

    /// The category rule, when categories are restricted.
    var categoryPolicy: ValidationCategoryPolicy? {
        allowedValidationCategories.map { ValidationCategoryPolicy(allowed: $0, allowsUnreported: acceptsUnreported) }
    }

    /// The bundle version rule, when a minimum is set. An invalid minimum is refused by the configuration's
    /// validation; a policy used without it takes the highest version there is as its minimum, failing closed.
    var bundleVersionPolicy: MinimumBundleVersionPolicy? {
        guard let text = minimumBundleVersion else { return nil }
        let highest = Array(repeating: "999999999", count: 8).joined(separator: ".")
        guard let minimum = BundleVersion(text) ?? BundleVersion(highest) else { return nil }
        return MinimumBundleVersionPolicy(minimum, allowsUnreported: acceptsUnreported)
    }

    /// Refuses a minimum OS or bundle version that is not a dotted version (the rules below would otherwise take the
    /// highest version there is, refusing every key).
    /// - Throws: ``ConfigurationError`` naming `policy.minimum-os-version` or `policy.minimum-bundle-version`.
    public func validateMinimumVersions() throws(ConfigurationError) {
        if let minimum = minimumOSVersion, OSVersion(minimum) == nil {
            throw ConfigurationError("policy.minimum-os-version", "is a dotted version such as 17.4")
        }
        if let minimum = minimumBundleVersion, BundleVersion(minimum) == nil {
            throw ConfigurationError(
                "policy.minimum-bundle-version", "is 1 to 8 dot-separated integers of 1 to 9 digits, such as 2.10.1")
        }
    }

    /// The OS version rule, when a minimum is set. An invalid minimum is refused by the configuration's validation;
    /// a policy used without it takes the highest version there is as its minimum, failing closed.
    var osVersionPolicy: MinimumOSVersionPolicy? {
        guard let text = minimumOSVersion else { return nil }
        let highest = Array(repeating: "999999", count: 4).joined(separator: ".")
        guard let minimum = OSVersion(text) ?? OSVersion(highest) else { return nil }
        return MinimumOSVersionPolicy(minimum)
    }

    /// The attestation rules of this deployment, composed: AttestKit's `ValidationCategoryPolicy` when categories
    /// are restricted, its `MinimumOSVersionPolicy` when a minimum is set, its
    /// `MinimumBundleVersionPolicy` when a minimum bundle version is, then its `MacOSKeyAccessControlPolicy` when
    /// macOS App IDs are named.
    @AttestationPolicyBuilder public var attestationPolicy: some AttestationPolicy {
        if let categoryPolicy { categoryPolicy }
        if let osVersionPolicy { osVersionPolicy }
        if let bundleVersionPolicy { bundleVersionPolicy }
        if !macOSAppIDs.isEmpty { MacOSKeyAccessControlPolicy(appIDs: macOSAppIDs) }
    }

    /// The assertion rules of this deployment, composed: the same category and bundle version policies as
    /// ``attestationPolicy``, then AttestKit's `ValidationCategoryChangePolicy` when a change is refused (with
    /// `step-up` the ``AssertionGate`` marks the accepted assertion instead: ``stepsUpOnValidationCategoryChange``).
    @AssertionPolicyBuilder public var assertionPolicy: some AssertionPolicy {
        if let categoryPolicy { categoryPolicy }
        if let bundleVersionPolicy { bundleVersionPolicy }
        if refusesValidationCategoryChange { ValidationCategoryChangePolicy() }
    }

    /// Whether an accepted assertion whose category changed since registration asks for step-up.
    public var stepsUpOnValidationCategoryChange: Bool { validationCategoryChange == .stepUp }

    /// When a key's risk asks for step-up.
    public var riskPolicy: RiskPolicy {
        RiskPolicy(threshold: riskMetricThreshold, stepUpWhileUnknown: stepUpWhileRiskUnknown)
    }
}
