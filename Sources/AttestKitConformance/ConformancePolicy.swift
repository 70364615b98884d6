package import AttestKit

/// A vector's deployment policy (`policy` in the software Apple's policy vectors), in the terms of the service's
/// settings, composed into AttestKit's policies as `DeploymentPolicy` of AttestKitFlows composes them.
package struct ConformancePolicy: Decodable, Sendable {
    /// `policy.validation-categories`: names or numbers, and `unreported`; `nil` accepts any.
    package var validationCategories: [String]?
    /// `policy.minimum-bundle-version`; `nil` accepts any.
    package var minimumBundleVersion: String?
    /// `policy.validation-category-change`: `refuse` (absent) or `allow`.
    package var validationCategoryChange: String?
    /// `policy.macos-app-ids`.
    package var macOSAppIds: [String]?

    /// A policy that adds nothing to Apple's checks.
    package init() {}

    /// The attestation rules: categories, minimum bundle version, macOS access control.
    /// - Throws: ``AttestKitError`` when the vector's policy does not parse (an unknown category name, a minimum
    ///   that is not a version, an invalid App ID).
    package func attestationPolicy() throws(AttestKitError) -> some AttestationPolicy {
        let categories = try categoryPolicy()
        let bundleVersion = try bundleVersionPolicy()
        let macOS = try macOSAppIds.map { ids throws(AttestKitError) in
            MacOSKeyAccessControlPolicy(appIDs: Set(try ids.map { id throws(AttestKitError) in try AppID(id) }))
        }
        return Self.compose(categories, bundleVersion, macOS)
    }

    /// The assertion rules: categories, minimum bundle version, then the change of category unless allowed.
    /// - Throws: ``AttestKitError`` when the vector's policy does not parse.
    package func assertionPolicy() throws(AttestKitError) -> some AssertionPolicy {
        let change: ValidationCategoryChangePolicy?
        switch validationCategoryChange {
        case nil, "refuse": change = ValidationCategoryChangePolicy()
        case "allow": change = nil
        default: throw Self.malformed("validationCategoryChange is neither refuse nor allow")
        }
        let categories = try categoryPolicy()
        let bundleVersion = try bundleVersionPolicy()
        return Self.compose(categories, bundleVersion, change)
    }

    @AttestationPolicyBuilder
    private static func compose(
        _ categories: ValidationCategoryPolicy?, _ bundleVersion: MinimumBundleVersionPolicy?,
        _ macOS: MacOSKeyAccessControlPolicy?
    ) -> some AttestationPolicy {
        if let categories { categories }
        if let bundleVersion { bundleVersion }
        if let macOS { macOS }
    }

    @AssertionPolicyBuilder
    private static func compose(
        _ categories: ValidationCategoryPolicy?, _ bundleVersion: MinimumBundleVersionPolicy?,
        _ change: ValidationCategoryChangePolicy?
    ) -> some AssertionPolicy {
        if let categories { categories }
        if let bundleVersion { bundleVersion }
        if let change { change }
    }

    private var allowsUnreported: Bool { validationCategories?.contains("unreported") ?? false }

    private func categoryPolicy() throws(AttestKitError) -> ValidationCategoryPolicy? {
        guard let names = validationCategories else { return nil }
        var allowed: Set<UInt32> = []
        for name in names where name != "unreported" {
            guard let category = ValidationCategory(parsing: name) else {
                throw Self.malformed("validationCategories names an unknown category")
            }
            allowed.insert(category.rawValue)
        }
        return ValidationCategoryPolicy(allowed: allowed, allowsUnreported: allowsUnreported)
    }

    private func bundleVersionPolicy() throws(AttestKitError) -> MinimumBundleVersionPolicy? {
        guard let text = minimumBundleVersion else { return nil }
        guard let minimum = BundleVersion(text) else {
            throw Self.malformed("minimumBundleVersion is not dot-separated integers")
        }
        return MinimumBundleVersionPolicy(minimum, allowsUnreported: allowsUnreported)
    }

    /// A policy that does not parse: the vector is malformed (a `format` reject, as a malformed object's).
    private static func malformed(_ reason: String) -> AttestKitError {
        AttestKitError(.attestationMalformed, "the vector's policy: \(reason)")
    }
}
