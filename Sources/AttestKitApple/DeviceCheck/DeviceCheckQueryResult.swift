/// What DeviceCheck's `query_two_bits` says about a device.
///
/// Apple answers a device whose bits were never set with HTTP 200 and the plain text `Failed to find bit state`
/// (its table calls it "Bit State Not Found"); that is ``notFound``, which reads as both bits false.
public enum DeviceCheckQueryResult: Sendable, Hashable, CustomStringConvertible {
    /// The stored bits and the month they were last updated.
    case bits(bit0: Bool, bit1: Bool, lastUpdateTime: DeviceCheckMonth?)
    /// The bits of this device were never set.
    case notFound

    /// Bit 0; `false` when never set.
    public var bit0: Bool {
        if case .bits(let bit0, _, _) = self { return bit0 }
        return false
    }

    /// Bit 1; `false` when never set.
    public var bit1: Bool {
        if case .bits(_, let bit1, _) = self { return bit1 }
        return false
    }

    /// The month of the last update; `nil` when never set (or when Apple left it out).
    public var lastUpdateTime: DeviceCheckMonth? {
        if case .bits(_, _, let month) = self { return month }
        return nil
    }

    /// Whether the bits were ever set.
    public var isFound: Bool {
        if case .bits = self { return true }
        return false
    }

    /// `bit0=… bit1=… last_update_time=…`, or `not found`.
    public var description: String {
        switch self {
        case .bits(let bit0, let bit1, let month):
            "bit0=\(bit0) bit1=\(bit1) last_update_time=\(month?.description ?? "none")"
        case .notFound:
            "not found (never set: both bits false)"
        }
    }
}
