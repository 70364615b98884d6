import AttestKit
import AttestKitStore
public import AttestKitWire

extension AssertionResponse {
    /// The answer to an accepted assertion: the key, its counter, its risk as `policy` rates it, the
    /// freshness the gate enforced, and the iOS 27 data the assertion reported.
    public init(_ accepted: AcceptedAssertion, freshness: Freshness, policy: RiskPolicy) {
        self.init(
            keyId: accepted.key.keyID.base64, counter: accepted.counter,
            environment: accepted.key.environment.rawValue, riskMetric: accepted.key.riskMetric,
            riskStatus: RiskPolicy.status(accepted.key.riskMetric),
            stepUp: policy.requiresStepUp(accepted.key.riskMetric), freshness: freshness.kind,
            bundleVersion: accepted.bundleVersion, validationCategory: accepted.validationCategory)
    }
}
