/// The outcome of one ``AttestationPolicy``: met, or failed with a reason (never a bare `false`).
public enum PolicyResult: Sendable, Hashable {
    /// The attestation meets the policy.
    case meetsPolicy
    /// The attestation fails the policy, for this reason.
    case failsToMeetPolicy(PolicyFailureReason)
}
