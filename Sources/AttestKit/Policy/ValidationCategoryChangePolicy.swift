/// Refuses an assertion whose iOS 27 validation category differs from the one its key's attestation reported
/// (``AttestKitError/Code/policyValidationCategoryChanged``).
///
/// A key lives in the device's keychain, which a later build of the same app (same team and bundle id) inherits,
/// however that build was signed: an App Store key asserting from a development-signed or re-signed build is this
/// case. A key registered without a category (before iOS 27) that reports one after an OS update has not changed
/// category and meets the policy; a key registered with a category whose assertion reports none fails it. An
/// honest change (a TestFlight tester installing the App Store release over it) is refused too: the app attests a
/// new key, registered under its new category. A deployment that would rather ask for more than refuse (re-login,
/// a second factor before a sensitive action) accepts the assertion and asks for step-up where ``changed(_:of:)``
/// holds (AttestKitFlows' `policy.validation-category-change` `step-up`).
public struct ValidationCategoryChangePolicy: AssertionPolicy, Hashable {
    /// Creates the policy.
    public init() {}

    /// Met when the assertion reports the category its key was registered with, or the key was registered with
    /// none.
    ///
    /// - Parameters:
    ///   - assertion: An assertion whose signature and counter verified.
    ///   - key: What the key's attestation reported.
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_validation_category_changed`.
    public func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult {
        guard Self.changed(assertion, of: key), let registered = key.validationCategory else { return .meetsPolicy }
        let now = assertion.validationCategory.map { ValidationCategory($0).description } ?? "none"
        return .failsToMeetPolicy(
            PolicyFailureReason(
                .policyValidationCategoryChanged,
                "the key was registered from a build of validation category \(ValidationCategory(registered)); "
                    + "this assertion reports \(now)"))
    }

    /// Whether `assertion` reports another validation category than `key`'s attestation did: the attestation
    /// reported one, and the assertion reports a different one or none. A key registered without a category (before
    /// iOS 27) has not changed, whatever its assertions report.
    ///
    /// - Parameters:
    ///   - assertion: An assertion whose signature and counter verified.
    ///   - key: What the key's attestation reported.
    /// - Returns: `true` where ``check(_:of:)`` refuses.
    public static func changed(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> Bool {
        guard let registered = key.validationCategory else { return false }
        return assertion.validationCategory != registered
    }
}
