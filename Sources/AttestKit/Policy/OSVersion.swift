/// A dotted numeric OS version (`17`, `17.4`, `17.4.1`), compared component by component; missing components
/// are zero.
public struct OSVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numeric components.
    public let components: [Int]

    /// Parses `17.4.1`; `nil` for anything but one to four dot-separated numbers of at most six digits.
    public init?(_ text: some StringProtocol) {
        guard let components = DottedVersion.components(of: text, maximumComponents: 4, maximumDigits: 6)
        else { return nil }
        self.components = components
    }

    /// Compares component by component.
    public static func < (lhs: OSVersion, rhs: OSVersion) -> Bool {
        DottedVersion.precedes(lhs.components, rhs.components)
    }

    /// Equal when every component is (`17.0` == `17`).
    public static func == (lhs: OSVersion, rhs: OSVersion) -> Bool { !(lhs < rhs) && !(rhs < lhs) }

    /// Hashes the components without trailing zeros, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        DottedVersion.hash(components, into: &hasher)
    }

    /// `17.4.1`.
    public var description: String { components.map(String.init).joined(separator: ".") }
}
