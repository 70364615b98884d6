/// Names for the four states of a device's two DeviceCheck bits, configured per deployment, so that backends read
/// and write meanings rather than bits.
///
/// State `n` is `bit0 = n & 1`, `bit1 = n >> 1 & 1`: the names are given in the order (false, false),
/// (true, false), (false, true), (true, true), that is bit0 bit1 = 00, 10, 01, 11. The preset ``trialAndBan``
/// (`devicecheck.states: trial-and-ban`) is the usual scheme: 00 never used a trial (`trial_eligible`), 10 trial
/// active (`trial_active`), 01 banned (`banned`), 11 trial used up (`trial_used`).
///
/// A state named `banned` is sticky: the backend's update route refuses to move a device out of it
/// (`devicecheck_unban_requires_admin`); the operator's `POST /v1/devicecheck/unban` (admin token) does.
public struct DeviceCheckStates: Sendable, Hashable {
    /// The four names, by state.
    public let names: [String]

    /// Four distinct names of 1 to 64 characters `[a-z0-9_-]`.
    /// - Throws: ``ConfigurationError`` for `devicecheck.states`.
    public init(_ names: [String]) throws(ConfigurationError) {
        guard names.count == 4 else {
            throw ConfigurationError("devicecheck.states", "names exactly four states")
        }
        guard Set(names).count == 4 else { throw ConfigurationError("devicecheck.states", "names are distinct") }
        for name in names {
            guard (1...64).contains(name.utf8.count),
                name.utf8.allSatisfy({
                    (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D
                })
            else {
                throw ConfigurationError(
                    "devicecheck.states", "names are 1 to 64 characters of a-z, 0-9, _ and -")
            }
        }
        self.names = names
    }

    /// The trial and ban scheme: 00 `trial_eligible`, 10 `trial_active`, 01 `banned`, 11 `trial_used`
    /// (bit0 bit1).
    public static let trialAndBan = DeviceCheckStates(checked: [
        "trial_eligible", "trial_active", "banned", "trial_used",
    ])

    /// The presets `devicecheck.states` may name instead of four names.
    public static let presets: [String: DeviceCheckStates] = ["trial-and-ban": trialAndBan]

    private init(checked names: [String]) { self.names = names }

    /// The name of the sticky state, `banned`.
    public static let bannedName = "banned"

    /// Whether the state of `bit0`, `bit1` is the sticky `banned`.
    public func isBanned(bit0: Bool, bit1: Bool) -> Bool { name(bit0: bit0, bit1: bit1) == Self.bannedName }

    /// The name of a state.
    public func name(bit0: Bool, bit1: Bool) -> String { names[(bit0 ? 1 : 0) + (bit1 ? 2 : 0)] }

    /// The bits of a named state, or `nil` for a name this deployment does not define.
    public func bits(of name: String) -> (bit0: Bool, bit1: Bool)? {
        guard let index = names.firstIndex(of: name) else { return nil }
        return (index & 1 == 1, index & 2 == 2)
    }
}
