/// An iOS 27 launch validation category (`apple_validation_category_01`): how the running app's code signature was
/// validated, as a number, with Apple's names for the numbers Apple publishes.
///
/// App Attest's documentation names the field but gives no table. The numbers and names here are Apple's
/// code-signing validation categories, the enumeration Apple publishes as `es_cs_validation_category_t`
/// (EndpointSecurity) and `ValidationCategory.Value` (LightweightCodeRequirements): 1 `platform`, 2 `testflight`,
/// 3 `development`, 4 `app-store`, 5 `enterprise`, 6 `developer-id`, 7 `local-signing`, 8 `rosetta`, 9 `oop-jit`,
/// and 10, which Apple calls `none` (ad hoc signed, or an unrecognised chain): written as `10` only, so that it is
/// never mistaken for a device that reports no category (`unreported` in configuration). Apple's own description of `enterprise` ("signed by an Apple
/// issued distribution certificate and allowed to run via provisioning profile") covers ad hoc distribution too:
/// Apple has no separate number for ad hoc builds, so `ad-hoc` is not a name here (write `enterprise`, knowing it
/// admits both). Any other number is kept and compared as a number.
public struct ValidationCategory: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The number the authenticator data carries.
    public let rawValue: UInt32

    /// The category numbered `rawValue`.
    ///
    /// - Parameter rawValue: The number the authenticator data carries.
    public init(_ rawValue: UInt32) { self.rawValue = rawValue }

    /// Code signed by Apple or allowed by a loaded trust cache (1).
    public static let platform = ValidationCategory(1)
    /// Signed by Apple's TestFlight certificate (2).
    public static let testFlight = ValidationCategory(2)
    /// Signed by an Apple-issued development certificate (3).
    public static let development = ValidationCategory(3)
    /// Signed by the App Store (4).
    public static let appStore = ValidationCategory(4)
    /// Signed by an Apple-issued distribution certificate and run through a provisioning profile: enterprise and
    /// ad hoc distribution (5).
    public static let enterprise = ValidationCategory(5)
    /// Signed by a Developer ID certificate (macOS) (6).
    public static let developerID = ValidationCategory(6)
    /// Signed locally (7).
    public static let localSigning = ValidationCategory(7)
    /// Translated by Rosetta (8).
    public static let rosetta = ValidationCategory(8)
    /// Out-of-process JIT (9).
    public static let oopJIT = ValidationCategory(9)

    /// The names accepted in configuration, with their numbers (10 has none here: see above).
    public static let names: [(name: String, category: ValidationCategory)] = [
        ("platform", .platform), ("testflight", .testFlight), ("development", .development),
        ("app-store", .appStore), ("enterprise", .enterprise), ("developer-id", .developerID),
        ("local-signing", .localSigning), ("rosetta", .rosetta), ("oop-jit", .oopJIT),
    ]

    /// A category by name (`app-store`, case-insensitive) or by decimal number (`4`); `nil` for anything else.
    ///
    /// - Parameter text: A name of ``names`` or a number from 0 to `UInt32.max`, without sign or spaces.
    public init?(parsing text: some StringProtocol) {
        let lowered = text.lowercased()
        if let named = Self.names.first(where: { $0.name == lowered }) {
            self = named.category
            return
        }
        guard (1...10).contains(text.utf8.count), text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let number = UInt32(text)
        else { return nil }
        self.init(number)
    }

    /// Apple's name of the category (`app-store`), or `nil` for a number Apple has not named.
    public var name: String? { Self.names.first { $0.category == self }?.name }

    /// `app-store (4)`, or the number alone.
    public var description: String { name.map { "\($0) (\(rawValue))" } ?? String(rawValue) }

    /// By number.
    public static func < (lhs: ValidationCategory, rhs: ValidationCategory) -> Bool { lhs.rawValue < rhs.rawValue }
}
