public import AttestKitStore

/// What a guard decided about one request, on the request's context for the route to act on.
public struct RequestAttestation: Sendable {
    /// The route group's name.
    public let group: String
    /// What proved the request, or `nil` when nothing did (a reported refusal, or mode `off`).
    public let trust: TrustLevel?
    /// The key whose assertion was verified, at ``TrustLevel/appAttest``.
    public let key: KeyRecord?
    /// Whether the guard enforced (`enforce` mode, in the rollout): a refusal would have been answered.
    public let enforced: Bool
    /// What enforcing would have refused, for a request let through unverified (report mode, outside the rollout).
    public let refusal: FlowError?
    /// Whether the route should ask for step-up: the key's risk metric is above the deployment's threshold, or
    /// unknown while the deployment steps up on unknown risk (a DeviceCheck or debug request has no metric).
    /// A change of validation category since registration marked for step-up sets it too
    /// (``validationCategoryChanged``).
    public let stepUp: Bool
    /// iOS 27+: the bundle version the verified assertion reported, at ``TrustLevel/appAttest``.
    public let bundleVersion: String?
    /// iOS 27+: the validation category the verified assertion reported, at ``TrustLevel/appAttest``.
    public let validationCategory: UInt32?
    /// Whether step-up is asked for because the verified assertion reports another validation category than its
    /// key's attestation did (`policy.validation-category-change` `step-up`), at ``TrustLevel/appAttest``.
    public let validationCategoryChanged: Bool
    /// The gate whose guard proved the request (``trust`` set by a ``RouteGuard``), `nil` otherwise: what lets a
    /// nested guard of the same gate take the proof as its own rather than verify a spent assertion again.
    package var provedBy: ProofMark?

    /// Creates a decision.
    public init(
        group: String, trust: TrustLevel?, key: KeyRecord?, enforced: Bool, refusal: FlowError?, stepUp: Bool,
        bundleVersion: String? = nil, validationCategory: UInt32? = nil, validationCategoryChanged: Bool = false
    ) {
        self.validationCategoryChanged = validationCategoryChanged
        self.group = group
        self.trust = trust
        self.key = key
        self.enforced = enforced
        self.refusal = refusal
        self.stepUp = stepUp
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
    }

    /// Whether something proved the request.
    public var isVerified: Bool { trust != nil }

    /// Checks that the request was proved at `level` or above, for a route that asks more than its group.
    /// - Throws: `assertion_required` (unauthenticated) when nothing proved it, `trust_insufficient` (refused)
    ///   when it was proved at a lower level.
    public func require(_ level: TrustLevel) throws(FlowError) {
        guard let trust else { throw refusal ?? FlowError.assertionRequired }
        guard trust >= level else { throw FlowError.trustInsufficient(trust, required: level) }
    }
}
