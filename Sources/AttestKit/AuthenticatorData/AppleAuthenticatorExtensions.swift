/// The extension map that iOS 27 and later append to App Attest authenticator data.
///
/// It is one CBOR map with text keys, after the COSE key in an attestation and after byte 37 in an
/// assertion. Apple's 2026 sample carries
/// `{"apple_bundle_version_01": "1", "apple_validation_category_01": h'01000000'}` with the ED flag
/// clear. Keys this library does not know are kept by name in ``otherKeys`` and otherwise ignored.
public struct AppleAuthenticatorExtensions: Sendable, Hashable {
    /// The app's bundle version (`apple_bundle_version_01`), when present.
    public let bundleVersion: String?
    /// The launch validation category (`apple_validation_category_01`), when present.
    ///
    /// It arrives either as a 4-byte byte string read little-endian (Apple's sample) or as a CBOR
    /// unsigned integer; both give the same number. Apple has published no meaning for the values.
    public let validationCategory: UInt32?
    /// The names of the other keys, in input order. Their values are not interpreted.
    public let otherKeys: [String]

    /// The key of ``bundleVersion``.
    static let bundleVersionKey = "apple_bundle_version_01"
    /// The key of ``validationCategory``.
    static let validationCategoryKey = "apple_validation_category_01"

    /// Reads the extensions from a decoded CBOR map.
    /// - Throws: ``AttestKitError/Code/authenticatorDataMalformed`` when `value` is not a map with
    ///   text keys, or a known key has a value of the wrong type or size.
    package init(_ value: CBORValue) throws(AttestKitError) {
        guard let entries = value.mapValue else {
            throw AttestKitError(
                .authenticatorDataMalformed, "the authenticator data extensions are a \(value.kindName), not a map")
        }
        var bundleVersion: String?
        var validationCategory: UInt32?
        var otherKeys = [String]()
        for entry in entries {
            guard let key = entry.key.textValue else {
                throw AttestKitError(
                    .authenticatorDataMalformed, "an authenticator data extension key is a \(entry.key.kindName)")
            }
            switch key {
            case Self.bundleVersionKey:
                guard let text = entry.value.textValue else {
                    throw AttestKitError(
                        .authenticatorDataMalformed, "\(key) is a \(entry.value.kindName), not a text string")
                }
                bundleVersion = text
            case Self.validationCategoryKey:
                validationCategory = try Self.category(entry.value)
            default:
                otherKeys.append(key)
            }
        }
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
        self.otherKeys = otherKeys
    }

    /// The validation category from a 4-byte little-endian byte string or an unsigned integer.
    private static func category(_ value: CBORValue) throws(AttestKitError) -> UInt32 {
        switch value {
        case .bytes(let bytes) where bytes.count == 4:
            return bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
        case .unsigned(let number):
            guard let category = UInt32(exactly: number) else {
                throw AttestKitError(.authenticatorDataMalformed, "\(validationCategoryKey) exceeds UInt32.max")
            }
            return category
        default:
            throw AttestKitError(
                .authenticatorDataMalformed,
                "\(validationCategoryKey) is neither 4 little-endian bytes nor an unsigned integer")
        }
    }
}
