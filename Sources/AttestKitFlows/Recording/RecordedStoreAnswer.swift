/// A refusal the store answered during a recorded verification, and at which step: the replay answers the same
/// at the same step.
public struct RecordedStoreAnswer: Sendable, Hashable, Codable {
    /// The step of the flow that asked the store.
    public enum Step: String, Sendable, Hashable, Codable {
        /// Consuming the one-time challenge.
        case challenge
        /// Looking up the key (an attestation's key already known).
        case key
        /// Storing a verified key.
        case registration
        /// The atomic counter advance (a concurrent copy won).
        case counter
    }

    /// The step.
    public var step: Step
    /// The store's code (`challenge_consumed`, `key_exists`, `counter_not_increasing`, ...).
    public var code: String

    /// Creates an answer.
    public init(step: Step, code: String) {
        self.step = step
        self.code = code
    }
}
