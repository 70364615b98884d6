/// An app's bundle version (`CFBundleVersion`, the iOS 27 `apple_bundle_version_01`), ordered as Apple orders
/// them: dot-separated non-negative integers compared component by component, a missing component counting as 0
/// (`2` == `2.0` == `2.0.0`, `2.10` > `2.9`, `1.01` == `1.1`).
///
/// Only that form parses: 1 to 8 components of 1 to 9 ASCII digits each. Anything else (letters as in `1.0b3`,
/// a sign, spaces, an empty component as in `1..2` or `1.`) is not a version this type orders, and
/// ``init(_:)`` answers `nil`; a policy then fails closed.
public struct BundleVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The numeric components, as written.
    public let components: [Int]

    /// Parses `2.10.1`; `nil` for anything but 1 to 8 dot-separated numbers of 1 to 9 digits.
    ///
    /// - Parameter text: The bundle version.
    public init?(_ text: some StringProtocol) {
        guard let components = DottedVersion.components(of: text, maximumComponents: 8, maximumDigits: 9)
        else { return nil }
        self.components = components
    }

    /// Compares component by component, missing components being 0.
    public static func < (lhs: BundleVersion, rhs: BundleVersion) -> Bool {
        DottedVersion.precedes(lhs.components, rhs.components)
    }

    /// Equal when every component is, missing ones being 0.
    public static func == (lhs: BundleVersion, rhs: BundleVersion) -> Bool { !(lhs < rhs) && !(rhs < lhs) }

    /// Hashes the components without trailing zeros, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        DottedVersion.hash(components, into: &hasher)
    }

    /// `2.10.1`, without leading zeros.
    public var description: String { components.map(String.init).joined(separator: ".") }
}
