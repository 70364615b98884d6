import AttestKit
import AttestKitStore
public import AttestKitWire

extension AssertionResponse {
    /// The answer to an accepted assertion: the key, its counter, its risk as `policy` rates it, the
    /// freshness the gate enforced, and the iOS 27 data the assertion reported. A change of validation category the
    /// gate marked for step-up (``AcceptedAssertion/validationCategoryChanged``) asks for step-up whatever the risk.
    public init(_ accepted: AcceptedAssertion, freshness: Freshness, policy: RiskPolicy) {
        self.init(
            keyId: accepted.key.keyID.base64, counter: accepted.counter,
            environment: accepted.key.environment.rawValue, riskMetric: accepted.key.riskMetric,
            riskStatus: RiskPolicy.status(accepted.key.riskMetric),
            stepUp: policy.requiresStepUp(accepted.key.riskMetric) || accepted.validationCategoryChanged,
            freshness: freshness.kind, bundleVersion: accepted.bundleVersion,
            validationCategory: accepted.validationCategory,
            validationCategoryChanged: accepted.validationCategoryChanged ? true : nil)
    }
}
