/// A deployment rule an attestation must meet once Apple's checks passed: a validation category, a minimum OS
/// version, or a rule of the adopter's own.
///
/// ``AttestationVerifier`` runs its policy in ``AttestationVerifier/verify(_:keyID:clientData:at:)``, right after
/// Apple's checks, in the same call: a refusal is thrown as an ``AttestKitError`` of the
/// ``AttestKitError/Check/policy`` check, with the policy's code and reason. Policies compose with
/// ``AttestationPolicyBuilder`` and are checked in order; the first refusal wins.
///
/// ```swift
/// let verifier = AttestationVerifier(configuration: configuration) {
///     ValidationCategoryPolicy(allowed: [2])
///     if let minimum = OSVersion("17.4") { MinimumOSVersionPolicy(minimum) }
/// }
/// ```
///
/// A policy of your own returns a ``PolicyFailureReason`` with a code made by
/// ``AttestKitError/Code/init(policy:)``:
///
/// ```swift
/// struct ClosedForMaintenance: AttestationPolicy {
///     func check(_: VerifiedAttestation) -> PolicyResult {
///         .failsToMeetPolicy(PolicyFailureReason(.init(policy: "policy_maintenance"), "closed for maintenance"))
///     }
/// }
/// ```
///
/// A policy sees only what Apple's checks verified, so it must be cheap and must not throw: it decides on the
/// ``VerifiedAttestation`` alone.
public protocol AttestationPolicy: Sendable {
    /// Whether `attestation` meets the rule, and why not when it does not.
    ///
    /// - Parameter attestation: An attestation that passed Apple's checks.
    /// - Returns: ``PolicyResult/meetsPolicy``, or the reason of the refusal.
    func check(_ attestation: VerifiedAttestation) -> PolicyResult
}
