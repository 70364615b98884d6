/// When a key's risk asks for step-up.
///
/// A key's risk is unknown until its receipt has been traded with Apple (the receipt of an attestation carries no
/// metric): unknown is not low, and a deployment may ask for step-up while it lasts.
public struct RiskPolicy: Sendable, Hashable {
    /// A metric above this requires step-up; `nil` never.
    public var threshold: Int?
    /// Whether an unknown risk requires step-up.
    public var stepUpWhileUnknown: Bool

    /// Creates a risk policy.
    public init(threshold: Int? = nil, stepUpWhileUnknown: Bool = false) {
        self.threshold = threshold
        self.stepUpWhileUnknown = stepUpWhileUnknown
    }

    /// Whether a key with `metric` (`nil`: not yet rated by Apple) must step up.
    public func requiresStepUp(_ metric: Int?) -> Bool {
        guard let metric else { return stepUpWhileUnknown }
        guard let threshold else { return false }
        return metric > threshold
    }

    /// Whether the deployment steps up on risk at all: a threshold is set, or unknown risk steps up.
    public var isActive: Bool { threshold != nil || stepUpWhileUnknown }

    /// Whether a request proved at `trust` (`nil`: not proved, as a reported request) by a key with `metric` must
    /// step up. Weaker proof never lowers the bar: while the policy ``isActive``, anything less than an App Attest
    /// assertion (a DeviceCheck or debug token, which carry no metric, or no proof at all) steps up, so that a risky
    /// device cannot shed its step-up by sending a weaker proof, or none, where that is let through.
    public func requiresStepUp(trust: TrustLevel?, metric: Int?) -> Bool {
        guard trust == .appAttest else { return isActive }
        return requiresStepUp(metric)
    }

    /// `assessed` once Apple rated the key, `unknown` before: what answers say beside `riskMetric`.
    public static func status(_ metric: Int?) -> String { metric == nil ? "unknown" : "assessed" }
}
