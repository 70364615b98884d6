/// How much a verified request is trusted, by what proved it: an App Attest assertion above a DeviceCheck token
/// (the fallback of devices without App Attest) above a debug token (Simulator and CI builds).
///
/// Ordered: `TrustLevel.appAttest > .deviceCheck > .debug`. A route group declares the least it accepts
/// (``EnforcementPolicy/minimumTrust``).
public enum TrustLevel: String, Sendable, Hashable, CaseIterable, Comparable {
    /// A debug token of the deployment's allow-list: the lowest level, never in production.
    case debug
    /// A DeviceCheck token Apple validated: a genuine Apple device, not this app's attested key.
    case deviceCheck = "devicecheck"
    /// An App Attest assertion by a registered key.
    case appAttest = "app_attest"

    private var rank: Int {
        switch self {
        case .debug: 0
        case .deviceCheck: 1
        case .appAttest: 2
        }
    }

    /// Whether `lhs` is trusted less than `rhs`.
    public static func < (lhs: TrustLevel, rhs: TrustLevel) -> Bool { lhs.rank < rhs.rank }
}
