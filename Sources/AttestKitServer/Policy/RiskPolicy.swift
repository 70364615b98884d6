/// When a receipt's risk metric asks for step-up.
struct RiskPolicy: Sendable, Hashable {
    /// A metric above this requires step-up; `nil` never.
    var threshold: Int?

    /// Whether `metric` is above the threshold.
    func requiresStepUp(_ metric: Int?) -> Bool {
        guard let threshold, let metric else { return false }
        return metric > threshold
    }
}
