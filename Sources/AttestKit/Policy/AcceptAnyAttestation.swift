/// The policy that every attestation meets: what an empty builder block builds, and a verifier's policy unless
/// it is given one.
public struct AcceptAnyAttestation: AttestationPolicy, Hashable {
    /// Creates the policy.
    public init() {}

    /// Always ``PolicyResult/meetsPolicy``.
    ///
    /// - Parameter attestation: Any attestation.
    /// - Returns: ``PolicyResult/meetsPolicy``.
    public func check(_ attestation: VerifiedAttestation) -> PolicyResult { .meetsPolicy }
}
