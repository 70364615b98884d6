public import AttestKit

/// How many keys a store holds, by environment and state, for metrics.
public struct KeyCounts: Sendable, Hashable, CustomStringConvertible {
    /// One cell of the table: an environment and a state.
    public struct Bucket: Sendable, Hashable {
        /// The environment the keys were attested in.
        public let environment: AppAttestEnvironment
        /// Whether the keys are active or revoked.
        public let state: KeyState

        /// Creates a bucket.
        public init(environment: AppAttestEnvironment, state: KeyState) {
            self.environment = environment
            self.state = state
        }
    }

    /// The number of keys in each non-empty bucket.
    public let counts: [Bucket: Int]

    /// Creates counts from the non-empty buckets.
    public init(counts: [Bucket: Int]) {
        self.counts = counts.filter { $0.value > 0 }
    }

    /// The number of keys attested in `environment` that are in `state`.
    public func count(environment: AppAttestEnvironment, state: KeyState) -> Int {
        counts[Bucket(environment: environment, state: state)] ?? 0
    }

    /// The number of keys in `state`, over both environments.
    public func count(state: KeyState) -> Int {
        counts.filter { $0.key.state == state }.values.reduce(0, +)
    }

    /// Every key the store holds.
    public var total: Int { counts.values.reduce(0, +) }

    /// `production/active=3 …`, in a fixed order.
    public var description: String {
        AppAttestEnvironment.allCases.flatMap { environment in
            KeyState.allCases.map { state in
                "\(environment.rawValue)/\(state)=\(count(environment: environment, state: state))"
            }
        }.joined(separator: " ")
    }
}
