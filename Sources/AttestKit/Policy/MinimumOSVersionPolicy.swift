/// Accepts attestations of devices at ``minimum`` or a later OS version; an attestation without an OS version,
/// or with one that does not parse, fails it (``AttestKitError/Code/policyOSVersion``).
public struct MinimumOSVersionPolicy: AttestationPolicy, Hashable {
    /// The lowest version accepted.
    public let minimum: OSVersion

    /// A policy requiring `minimum`.
    ///
    /// - Parameter minimum: The lowest version accepted.
    public init(_ minimum: OSVersion) { self.minimum = minimum }

    /// Met when the attestation's OS version is at least ``minimum``.
    ///
    /// - Parameter attestation: An attestation that passed Apple's checks.
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_os_version`.
    public func check(_ attestation: VerifiedAttestation) -> PolicyResult {
        if let text = attestation.osVersion, let version = OSVersion(text), version >= minimum { return .meetsPolicy }
        return .failsToMeetPolicy(
            PolicyFailureReason(
                .policyOSVersion, "the OS version \(attestation.osVersion ?? "unknown") is below the minimum \(minimum)"
            ))
    }
}
