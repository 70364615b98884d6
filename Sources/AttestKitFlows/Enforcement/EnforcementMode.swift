/// What a guard does with a route group's requests.
///
/// Roll App Attest out as Apple advises: `report` first (every request is verified and its outcome counted, none is
/// refused), then `enforce` for a growing ``Rollout`` share of devices, then for all.
public enum EnforcementMode: String, Sendable, Hashable, CaseIterable {
    /// Verify and refuse what fails.
    case enforce
    /// Verify, count and log the outcome apart from enforced ones, and let every request through, marked
    /// unverified when it failed: what enforcing would refuse, before enforcing.
    case report
    /// Do not look at the request at all.
    case off
}
