/// A dotted numeric OS version (`17`, `17.4`, `17.4.1`), compared component by component; missing components
/// are zero.
public struct OSVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numeric components.
    public let components: [Int]

    /// Parses `17.4.1`; `nil` for anything but one to four dot-separated numbers of at most six digits.
    public init?(_ text: some StringProtocol) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(parts.count) else { return nil }
        var components: [Int] = []
        for part in parts {
            guard (1...6).contains(part.utf8.count), part.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let value = Int(part)
            else { return nil }
            components.append(value)
        }
        self.components = components
    }

    /// Compares component by component.
    public static func < (lhs: OSVersion, rhs: OSVersion) -> Bool {
        let count = max(lhs.components.count, rhs.components.count)
        for index in 0..<count {
            let left = index < lhs.components.count ? lhs.components[index] : 0
            let right = index < rhs.components.count ? rhs.components[index] : 0
            if left != right { return left < right }
        }
        return false
    }

    /// Equal when every component is (`17.0` == `17`).
    public static func == (lhs: OSVersion, rhs: OSVersion) -> Bool { !(lhs < rhs) && !(rhs < lhs) }

    /// Hashes the components without trailing zeros, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        var trimmed = components
        while trimmed.last == 0 { trimmed.removeLast() }
        hasher.combine(trimmed)
    }

    /// `17.4.1`.
    public var description: String { components.map(String.init).joined(separator: ".") }
}
