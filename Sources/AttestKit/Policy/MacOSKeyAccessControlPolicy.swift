/// Requires, for the keys of the App IDs a deployment declares macOS apps, the key access policy Apple documents for
/// macOS: the credential certificate's access-control extension (``AppAttestKeyAccessControl``) holds exactly
/// ``AppAttestKeyAccessControl/macOSFullSecurityPolicy``, a key that signs only with System Integrity Protection and
/// Full Security mode on. Keys of other App IDs pass untouched.
///
/// Apple asks servers to trust macOS keys for that exact policy only, but nothing in an attestation says reliably
/// that a key comes from a Mac (iOS keys carry the extension too, with another policy), so the deployment names its
/// macOS App IDs (on macOS the App ID is the team and the app's signing identifier). A key of one of them whose
/// extension is absent, malformed or another policy fails (``AttestKitError/Code/policyKeyAccessControl``).
public struct MacOSKeyAccessControlPolicy: AttestationPolicy, Hashable {
    /// The App IDs whose keys must carry the macOS policy.
    public let appIDs: Set<AppID>

    /// A policy for the keys of `appIDs`.
    ///
    /// - Parameter appIDs: The App IDs of the deployment's macOS apps.
    public init(appIDs: Set<AppID>) { self.appIDs = appIDs }

    /// Met when the attestation's App ID is not one of ``appIDs``, or its key carries the macOS policy.
    ///
    /// - Parameter attestation: An attestation that passed Apple's checks.
    /// - Returns: ``PolicyResult/meetsPolicy``, or `policy_key_access_control`.
    public func check(_ attestation: VerifiedAttestation) -> PolicyResult {
        guard appIDs.contains(attestation.appID) else { return .meetsPolicy }
        let found: String
        switch attestation.keyAccessControl {
        case .present(let accessControl) where accessControl.isMacOSFullSecurityPolicy: return .meetsPolicy
        case .present: found = "another access policy"
        case .absent: found = "no access-control extension"
        case .malformed: found = "a malformed access-control extension"
        }
        return .failsToMeetPolicy(
            PolicyFailureReason(
                .policyKeyAccessControl,
                "the key of a macOS App ID has \(found), not the policy of System Integrity Protection and Full "
                    + "Security mode"))
    }
}
