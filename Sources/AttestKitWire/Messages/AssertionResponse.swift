/// `POST /v1/assertions/verify` answer.
public struct AssertionResponse: Codable, Sendable, Hashable {
    /// The key id, Base64.
    public var keyId: String
    /// The assertion's counter, now stored.
    public var counter: UInt32
    /// `production` or `development`.
    public var environment: String
    /// Apple's latest risk metric for the key; absent when unknown.
    public var riskMetric: Int?
    /// `unknown` until Apple rated the key, then `assessed`.
    public var riskStatus: String
    /// Whether the deployment's policy asks for a step-up check: for this key's risk, or because the validation
    /// category changed since registration (``validationCategoryChanged``).
    public var stepUp: Bool
    /// The freshness the service enforced.
    public var freshness: Freshness.Kind
    /// iOS 27+: the bundle version the assertion reported (signed with it); absent before iOS 27, and for a key
    /// attested before iOS 27 (whose assertions' map nothing binds).
    public var bundleVersion: String?
    /// iOS 27+: the validation category the assertion reported (a number: 4 is the App Store); absent as
    /// ``bundleVersion`` is.
    public var validationCategory: UInt32?
    /// `true` when step-up is asked for because the assertion reports another validation category than its key's
    /// attestation did (`policy.validation-category-change` `step-up`); absent otherwise.
    public var validationCategoryChanged: Bool?

    /// Creates an answer.
    public init(
        keyId: String, counter: UInt32, environment: String, riskMetric: Int? = nil, riskStatus: String,
        stepUp: Bool, freshness: Freshness.Kind, bundleVersion: String? = nil, validationCategory: UInt32? = nil,
        validationCategoryChanged: Bool? = nil
    ) {
        self.validationCategoryChanged = validationCategoryChanged
        self.keyId = keyId
        self.counter = counter
        self.environment = environment
        self.riskMetric = riskMetric
        self.riskStatus = riskStatus
        self.stepUp = stepUp
        self.freshness = freshness
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
    }
}
