import AttestKit

extension SimulatedDevice {
    /// The key access-control extension (1.2.840.113635.100.8.6) a simulated device's credential certificates carry,
    /// as docs/apple-formats.md describes it.
    public enum KeyAccessControl: Sendable, Hashable, Codable {
        /// No extension, as keys attested before 2026.
        case none
        /// The policy real iOS 26 and 27 keys carry (``iOSPolicy``).
        case iOS
        /// The policy Apple documents for macOS keys: System Integrity Protection and Full Security mode
        /// (`AppAttestKeyAccessControl.macOSFullSecurityPolicy`).
        case macOS
        /// A well-formed extension wrapping another policy.
        case policy([UInt8])
        /// The extension's DER value exactly as given, malformed or not: for adversarial tests.
        case extensionValue([UInt8])

        /// The policy of every real iOS key seen with the extension (iOS 26.2 to 27.0, Apple's 2026 sample included),
        /// 69 bytes: version `"11"` and operations `okd`, `oa`, `osgn`, `odel`, `ock`, each `[1] BOOLEAN TRUE`.
        public static let iOSPolicy: [UInt8] =
            [0x30, 0x43, 0x0C, 0x02, 0x31, 0x31, 0x30, 0x3D]
            + operation("okd") + operation("oa") + operation("osgn") + operation("odel") + operation("ock")

        /// `SEQUENCE { UTF8String name, [1] { BOOLEAN TRUE } }`.
        private static func operation(_ name: String) -> [UInt8] {
            let bytes = Array(name.utf8)
            return [0x30, UInt8(bytes.count + 7), 0x0C, UInt8(bytes.count)] + bytes + [0xA1, 0x03, 0x01, 0x01, 0xFF]
        }

        /// The extension's DER value, or `nil` for ``none``.
        /// - Throws: ``SoftwareAppleError/Code/invalidInput`` for a ``policy(_:)`` that is not well formed.
        func extensionValue() throws(SoftwareAppleError) -> [UInt8]? {
            let policy: [UInt8]
            switch self {
            case .none: return nil
            case .extensionValue(let value): return value
            case .iOS: policy = Self.iOSPolicy
            case .macOS: policy = AppAttestKeyAccessControl.macOSFullSecurityPolicy
            case .policy(let bytes): policy = bytes
            }
            do {
                return try AppAttestKeyAccessControl(policy: policy).extensionValue
            } catch {
                throw SoftwareAppleError(.invalidInput, "the access policy is not well formed: \(error.reason)")
            }
        }
    }
}
