/// When a key's risk asks for step-up.
///
/// A key's risk is unknown until its receipt has been traded with Apple (the receipt of an attestation carries no
/// metric): unknown is not low, and a deployment may ask for step-up while it lasts.
struct RiskPolicy: Sendable, Hashable {
    /// A metric above this requires step-up; `nil` never.
    var threshold: Int?
    /// Whether an unknown risk requires step-up.
    var stepUpWhileUnknown = false

    /// Whether a key with `metric` (`nil`: not yet rated by Apple) must step up.
    func requiresStepUp(_ metric: Int?) -> Bool {
        guard let metric else { return stepUpWhileUnknown }
        guard let threshold else { return false }
        return metric > threshold
    }

    /// `assessed` once Apple rated the key, `unknown` before: what answers say beside `riskMetric`.
    static func status(_ metric: Int?) -> String { metric == nil ? "unknown" : "assessed" }
}
