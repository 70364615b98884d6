/// How a route group is guarded: its name (a metrics label), its ``EnforcementMode``, the ``Rollout`` share
/// enforced while the mode is `enforce`, and the least ``TrustLevel`` its routes accept.
///
/// ```swift
/// // Orders: enforced for 10 % of devices, App Attest only; the rest reported.
/// let orders = try EnforcementPolicy(group: "orders", mode: .enforce, rollout: Rollout(fraction: 0.1))
/// // Reads: DeviceCheck fallback accepted.
/// let reads = EnforcementPolicy(group: "reads", minimumTrust: .deviceCheck)
/// ```
public struct EnforcementPolicy: Sendable, Hashable {
    /// The group's name, `[a-z0-9_-]`, 1 to 64 characters: the `group` label of the guard's metrics.
    public let group: String
    /// What the guard does.
    public var mode: EnforcementMode
    /// The share of subjects enforced in `enforce` mode; the others are reported.
    public var rollout: Rollout
    /// The least trust the group's routes accept.
    public var minimumTrust: TrustLevel
    /// Whether a request that names no rollout subject (no subject from the application, no well-formed key id:
    /// a DeviceCheck or debug token, or nothing) is enforced below a rollout of 1. `true` by default: a request must
    /// not leave the rollout by leaving out its key id. A group that sets `false` reports such requests while it
    /// ramps up.
    public var enforcesWithoutSubject: Bool

    /// A policy for the group named `group`: by default enforced for everyone, App Attest only.
    /// - Throws: `invalid_field` for a group name that is not a closed label.
    public init(
        group: String = "default", mode: EnforcementMode = .enforce, rollout: Rollout = .everyone,
        minimumTrust: TrustLevel = .appAttest, enforcesWithoutSubject: Bool = true
    ) throws(FlowError) {
        guard (1...64).contains(group.utf8.count),
            group.utf8.allSatisfy({
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D
            })
        else {
            throw FlowError.invalidField("group", "is 1 to 64 characters of a-z, 0-9, _ and -")
        }
        self.group = group
        self.mode = mode
        self.rollout = rollout
        self.minimumTrust = minimumTrust
        self.enforcesWithoutSubject = enforcesWithoutSubject
    }

    /// Enforced for everyone, App Attest only, in the group `default`: what a guard does unless told otherwise.
    public static let enforceAll = EnforcementPolicy(uncheckedGroup: "default")

    private init(uncheckedGroup: String) {
        self.group = uncheckedGroup
        self.mode = .enforce
        self.rollout = .everyone
        self.minimumTrust = .appAttest
        self.enforcesWithoutSubject = true
    }

    /// Whether requests of `subject` are enforced: `enforce` mode and in the rollout; a request without a subject
    /// by ``enforcesWithoutSubject`` (or at a rollout of 1).
    public func enforces(_ subject: String?) -> Bool {
        guard mode == .enforce else { return false }
        guard let subject else { return enforcesWithoutSubject || rollout.includes(nil) }
        return rollout.includes(subject)
    }
}
