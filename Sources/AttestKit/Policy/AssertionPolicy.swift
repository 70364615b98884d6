/// A deployment rule every assertion must meet once its signature and counter verified: the same iOS 27 rules an
/// attestation meets (``ValidationCategoryPolicy``, ``MinimumBundleVersionPolicy``), and rules that compare an
/// assertion with its key's registration (``ValidationCategoryChangePolicy``).
///
/// From iOS 27 every assertion carries the app's bundle version and validation category too, signed with the
/// rest of its authenticator data; a policy decides on the ``VerifiedAssertion`` and the ``RegisteredKey`` it was
/// verified against. Policies compose with ``AssertionPolicyBuilder``, checked in order, the first refusal winning,
/// and a refusal carries its ``PolicyFailureReason``'s code.
///
/// ```swift
/// @AssertionPolicyBuilder var policy: some AssertionPolicy {
///     ValidationCategoryPolicy(allowed: [4], allowsUnreported: true)
///     if let minimum = BundleVersion("42") { MinimumBundleVersionPolicy(minimum) }
///     ValidationCategoryChangePolicy()
/// }
/// ```
public protocol AssertionPolicy: Sendable {
    /// Whether `assertion` by `key` meets the rule, and why not when it does not.
    ///
    /// - Parameters:
    ///   - assertion: An assertion whose signature and counter verified.
    ///   - key: What the key's attestation reported when it was registered.
    /// - Returns: ``PolicyResult/meetsPolicy``, or the reason of the refusal.
    func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult
}

/// What a key's attestation reported at registration, as stored: what an ``AssertionPolicy`` compares an
/// assertion with.
public struct RegisteredKey: Sendable, Hashable {
    /// The iOS 27 bundle version of the attestation, `nil` when it reported none.
    public let bundleVersion: String?
    /// The iOS 27 validation category of the attestation, `nil` when it reported none.
    public let validationCategory: UInt32?

    /// Creates the facts.
    ///
    /// - Parameters:
    ///   - bundleVersion: The bundle version at registration.
    ///   - validationCategory: The validation category at registration.
    public init(bundleVersion: String?, validationCategory: UInt32?) {
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
    }
}

/// The policy every assertion meets: what an empty ``AssertionPolicyBuilder`` block builds.
public struct AcceptAnyAssertion: AssertionPolicy, Hashable {
    /// Creates the policy.
    public init() {}

    /// Always ``PolicyResult/meetsPolicy``.
    ///
    /// - Parameters:
    ///   - assertion: Any assertion.
    ///   - key: Any key.
    /// - Returns: ``PolicyResult/meetsPolicy``.
    public func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult { .meetsPolicy }
}
