/// Names for the four states of a device's two DeviceCheck bits, configured per deployment (for example
/// `trial_eligible`, `trial_active`, `trial_used`, `banned`), so that backends read and write meanings rather than
/// bits.
///
/// State `n` is `bit0 = n & 1`, `bit1 = n >> 1 & 1`: the names are given in the order (false, false),
/// (true, false), (false, true), (true, true).
public struct DeviceCheckStates: Sendable, Hashable {
    /// The four names, by state.
    public let names: [String]

    /// Four distinct names of 1 to 64 characters `[a-z0-9_-]`.
    /// - Throws: ``ServerConfigurationError`` for `devicecheck.states`.
    public init(_ names: [String]) throws(ServerConfigurationError) {
        guard names.count == 4 else {
            throw ServerConfigurationError("devicecheck.states", "names exactly four states")
        }
        guard Set(names).count == 4 else { throw ServerConfigurationError("devicecheck.states", "names are distinct") }
        for name in names {
            guard (1...64).contains(name.utf8.count),
                name.utf8.allSatisfy({
                    (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F || $0 == 0x2D
                })
            else {
                throw ServerConfigurationError(
                    "devicecheck.states", "names are 1 to 64 characters of a-z, 0-9, _ and -")
            }
        }
        self.names = names
    }

    /// The name of a state.
    public func name(bit0: Bool, bit1: Bool) -> String { names[(bit0 ? 1 : 0) + (bit1 ? 2 : 0)] }

    /// The bits of a named state, or `nil` for a name this deployment does not define.
    public func bits(of name: String) -> (bit0: Bool, bit1: Bool)? {
        guard let index = names.firstIndex(of: name) else { return nil }
        return (index & 1 == 1, index & 2 == 2)
    }
}
