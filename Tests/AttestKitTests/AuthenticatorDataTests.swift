import Testing

@testable import AttestKit

@Suite struct AuthenticatorDataTests {
    static let sample2026 = "apple_doc_sample_2026_prod_attestation"

    static func authData(ofAttestation name: String) throws -> [UInt8] {
        let object = try CBORReader.decode(TestVectors.named(name).bytes[...])
        return Array(try #require(object[text: "authData"]?.bytesValue))
    }

    static func authData(ofAssertion vector: TestVector) throws -> [UInt8] {
        let object = try CBORReader.decode(vector.bytes[...])
        return Array(try #require(object[text: "authenticatorData"]?.bytesValue))
    }

    /// Python's `repr` of a byte string, as the vectors' `decoded` facts print it.
    static func pythonRepr(_ bytes: [UInt8]) -> String {
        "b'"
            + bytes.map { byte in
                (0x20..<0x7F).contains(byte) && byte != UInt8(ascii: "'") && byte != UInt8(ascii: "\\")
                    ? String(UnicodeScalar(byte)) : "\\x" + Hex.encode([byte])
            }.joined() + "'"
    }

    // MARK: real vectors

    @Test(arguments: TestVectors.kind("attestation"))
    func attestationMatchesDecodedFacts(vector: TestVector) throws {
        let facts = try #require(vector.decoded)
        let authData = try AuthenticatorData(attestation: Self.authData(ofAttestation: vector.name))
        let credential = try #require(authData.attestedCredential)
        #expect(authData.bytes.count == facts.authDataLength)
        #expect(Int(authData.signCount) == facts.counter)
        #expect(credential.aaguid == Array(facts.aaguid.utf8))
        #expect(credential.environment == (facts.aaguid == "appattestdevelop" ? .development : .production))
        #expect(authData.flags == [.attestedCredentialData])
        #expect(credential.publicKey.x963Representation.count == 65)
        if vector.expect != "reject:keyId", let keyID = vector.keyId {
            #expect(credential.credentialID == (try KeyID(string: keyID)).bytes)
        }
        if let trailing = facts.authDataTrailing {
            let extensions = try #require(authData.extensions)
            let bundleVersion = try #require(extensions.bundleVersion)
            let category = try #require(extensions.validationCategory)
            let categoryBytes = (0..<4).map { UInt8(truncatingIfNeeded: category >> (8 * $0)) }
            #expect(
                trailing == "{'\(AppleAuthenticatorExtensions.bundleVersionKey)': '\(bundleVersion)', "
                    + "'\(AppleAuthenticatorExtensions.validationCategoryKey)': \(Self.pythonRepr(categoryBytes))}")
            #expect(extensions.otherKeys.isEmpty)
        } else {
            #expect(authData.extensions == nil)
        }
    }

    @Test(arguments: TestVectors.kind("assertion"))
    func assertionMatchesVector(vector: TestVector) throws {
        let authData = try AuthenticatorData(assertion: Self.authData(ofAssertion: vector))
        #expect(authData.bytes.count == 37)
        #expect(authData.flags == [.attestedCredentialData])
        #expect(Int(authData.signCount) == vector.expectedCounter)
        #expect(authData.attestedCredential == nil && authData.extensions == nil)
        // The key the assertion was made with is the one its attestation carries.
        if let attestationName = vector.attestation, let publicKey = vector.publicKey {
            let attested = try AuthenticatorData(attestation: Self.authData(ofAttestation: attestationName))
            #expect(attested.attestedCredential?.publicKey.x963Representation == TestVectors.decode(publicKey))
        }
    }

    @Test func apple2026SampleCarriesExtensionsWithEDClear() throws {
        let authData = try AuthenticatorData(attestation: Self.authData(ofAttestation: Self.sample2026))
        #expect(authData.bytes.count == 226)
        #expect(!authData.flags.contains(.extensionData))
        #expect(authData.attestedCredential?.environment == .production)
        #expect(authData.extensions == (try .expected(bundleVersion: "1", validationCategory: 1, otherKeys: [])))
    }

    // MARK: truncation

    /// Every prefix of the 2026 authData fails with the code for where it stops, except the one that
    /// ends right after the COSE key: that is complete pre-iOS 27 authData.
    @Test func everyPrefixOf2026AuthDataIsRejected() throws {
        let full = try Self.authData(ofAttestation: Self.sample2026)
        let coseEnd = 164
        for length in 0..<full.count {
            let prefix = full[..<length]
            if length == coseEnd {
                let parsed = try AuthenticatorData(attestation: prefix)
                #expect(parsed.extensions == nil && parsed.attestedCredential != nil)
                continue
            }
            let expected: AttestKitError.Code = length <= 87 ? .authenticatorDataMalformed : .cborMalformed
            #expect(throws: AttestKitError.code(expected), "prefix of \(length) bytes") {
                try AuthenticatorData(attestation: prefix)
            }
        }
    }

    @Test func everyPrefixOfAssertionAuthDataIsRejected() throws {
        let full = try Self.authData(ofAssertion: TestVectors.named("veehaitch_ios-14.4_assertion"))
        for length in 0..<full.count {
            #expect(throws: AttestKitError.code(.authenticatorDataMalformed), "prefix of \(length) bytes") {
                try AuthenticatorData(assertion: full[..<length])
            }
        }
        // Too short for an attestation's fixed parts, too.
        #expect(throws: AttestKitError.code(.authenticatorDataMalformed)) { try AuthenticatorData(attestation: full) }
    }

    // MARK: header fields

    @Test func headerFieldsAreReadBigEndian() throws {
        let authData = try AuthenticatorData(assertion: AuthDataBuilder.header(flags: 0x45, counter: 0x0102_0304))
        #expect(authData.signCount == 0x0102_0304)
        #expect(authData.flags == [.userPresent, .userVerified, .attestedCredentialData])
        #expect(Array(authData.rpIDHash) == AuthDataBuilder.rpIDHash)
    }

    @Test(arguments: [
        (AppAttestEnvironment.production.aaguid, AppAttestEnvironment?.some(.production)),
        (AppAttestEnvironment.development.aaguid, .some(.development)),
        (Array("appattest".utf8) + [0, 0, 0, 0, 0, 0, 1], nil),
        (Array("appattestdevelo".utf8) + [0], nil),
        ([UInt8](repeating: 0, count: 16), nil),
    ])
    func environmentComesFromTheWholeAAGUID(aaguid: [UInt8], expected: AppAttestEnvironment?) throws {
        let authData = try AuthenticatorData(attestation: AuthDataBuilder.attestation(aaguid: aaguid))
        #expect(authData.attestedCredential?.aaguid == aaguid)
        #expect(authData.attestedCredential?.environment == expected)
    }

    @Test(arguments: [0, 16, 31, 33, 64, 0xFFFF])
    func credentialIDMustBe32Bytes(length: Int) {
        // The declared length is checked itself, both when the id really has that length and when
        // 32 bytes follow anyway (so the rest would parse if the length were ignored).
        let matching = AuthDataBuilder.attestation(
            credentialID: .init(repeating: 1, count: min(length, 64)), declaredIDLength: length)
        let lying = AuthDataBuilder.attestation(declaredIDLength: length)
        for bytes in [matching, lying] {
            #expect(throws: AttestKitError.code(.authenticatorDataMalformed)) {
                try AuthenticatorData(attestation: bytes)
            }
        }
    }

    @Test func sizeCap() throws {
        // Exactly 1024 bytes: header, then a map whose byte string fills the rest.
        let filler = 1024 - 37 - 1 - 2 - 3
        let atCap = AuthDataBuilder.assertion(
            extensions: .textMap(["x": .byteString(.init(repeating: 0, count: filler))]))
        #expect(atCap.count == 1024)
        #expect(try AuthenticatorData(assertion: atCap).extensions?.otherKeys == ["x"])
        #expect(throws: AttestKitError.code(.inputTooLarge)) { try AuthenticatorData(assertion: atCap + [0]) }
        #expect(throws: AttestKitError.code(.inputTooLarge)) {
            try AuthenticatorData(attestation: [UInt8](repeating: 0, count: 1025))
        }
    }

    // MARK: COSE key

    @Test func shortCoordinatesAreLeftPadded() throws {
        let x31 = [UInt8](repeating: 0x9A, count: 31)
        let y1 = [UInt8]([0x05])
        let key = try #require(
            try AuthenticatorData(attestation: AuthDataBuilder.attestation(key: AuthDataBuilder.coseKey(x: x31, y: y1)))
                .attestedCredential?.publicKey)
        #expect(key.x == [0] + x31)
        #expect(key.y == [UInt8](repeating: 0, count: 31) + y1)
        #expect(key.x963Representation == [0x04, 0x00] + x31 + [UInt8](repeating: 0, count: 31) + y1)
    }

    static func cose(_ entries: [(Int64, CBORValue)]) -> CBORValue {
        .map(entries.map { CBORMapEntry(key: .integer($0.0), value: $0.1) })
    }

    static let x = CBORValue.byteString(.init(repeating: 0x11, count: 32))
    static let y = CBORValue.byteString(.init(repeating: 0x22, count: 32))

    static let badKeys: [(String, CBORValue)] = [
        ("not a map", .array([.integer(2)])),
        ("empty map", .map([])),
        ("missing y", cose([(1, .integer(2)), (3, .integer(-7)), (-1, .integer(1)), (-2, x)])),
        (
            "extra key",
            cose([(1, .integer(2)), (3, .integer(-7)), (-1, .integer(1)), (-2, x), (-3, y), (4, .integer(0))])
        ),
        ("kty OKP", cose([(1, .integer(1)), (3, .integer(-7)), (-1, .integer(1)), (-2, x), (-3, y)])),
        ("alg ES384", cose([(1, .integer(2)), (3, .integer(-35)), (-1, .integer(1)), (-2, x), (-3, y)])),
        ("curve P-384", cose([(1, .integer(2)), (3, .integer(-7)), (-1, .integer(2)), (-2, x), (-3, y)])),
        ("kty as text", cose([(1, .text("EC2")), (3, .integer(-7)), (-1, .integer(1)), (-2, x), (-3, y)])),
        ("x as text", cose([(1, .integer(2)), (3, .integer(-7)), (-1, .integer(1)), (-2, .text("x")), (-3, y)])),
        ("x empty", cose([(1, .integer(2)), (3, .integer(-7)), (-1, .integer(1)), (-2, .byteString([])), (-3, y)])),
        (
            "y 33 bytes",
            cose([
                (1, .integer(2)), (3, .integer(-7)), (-1, .integer(1)), (-2, x),
                (-3, .byteString(.init(repeating: 1, count: 33))),
            ])
        ),
        ("key -4 instead of -3", cose([(1, .integer(2)), (3, .integer(-7)), (-1, .integer(1)), (-2, x), (-4, y)])),
    ]

    @Test(arguments: badKeys)
    func rejectsAnyOtherKey(label: String, key: CBORValue) {
        #expect(throws: AttestKitError.code(.authenticatorDataMalformed), "\(label)") {
            try AuthenticatorData(attestation: AuthDataBuilder.attestation(key: key))
        }
    }

    @Test func acceptsKeyEntriesInAnyOrder() throws {
        let reordered = Self.cose([(-3, Self.y), (-2, Self.x), (-1, .integer(1)), (3, .integer(-7)), (1, .integer(2))])
        let key = try AuthenticatorData(attestation: AuthDataBuilder.attestation(key: reordered)).attestedCredential?
            .publicKey
        #expect(key?.x == .init(repeating: 0x11, count: 32) && key?.y == .init(repeating: 0x22, count: 32))
    }

    // MARK: extensions

    @Test(arguments: [
        (CBORValue.byteString([1, 0, 0, 0]), UInt32(1)),
        (.byteString([2, 0, 0, 0]), 2),
        (.byteString([0x04, 0x03, 0x02, 0x01]), 0x0102_0304),
        (.byteString([0xFF, 0xFF, 0xFF, 0xFF]), .max),
        (.unsigned(1), 1),
        (.unsigned(2), 2),
        (.unsigned(UInt64(UInt32.max)), .max),
    ])
    func validationCategoryEncodings(encoded: CBORValue, expected: UInt32) throws {
        let map = CBORValue.textMap([AppleAuthenticatorExtensions.validationCategoryKey: encoded])
        let authData = try AuthenticatorData(assertion: AuthDataBuilder.assertion(extensions: map))
        #expect(authData.extensions?.validationCategory == expected)
        #expect(authData.extensions?.bundleVersion == nil)
    }

    static let badExtensions: [(String, CBORValue)] = [
        (
            "category of 3 bytes",
            .textMap([AppleAuthenticatorExtensions.validationCategoryKey: .byteString([1, 0, 0])])
        ),
        (
            "category of 5 bytes",
            .textMap([AppleAuthenticatorExtensions.validationCategoryKey: .byteString([1, 0, 0, 0, 0])])
        ),
        ("category above UInt32", .textMap([AppleAuthenticatorExtensions.validationCategoryKey: .unsigned(1 << 32)])),
        ("negative category", .textMap([AppleAuthenticatorExtensions.validationCategoryKey: .integer(-1)])),
        ("category as text", .textMap([AppleAuthenticatorExtensions.validationCategoryKey: .text("1")])),
        ("bundle version as bytes", .textMap([AppleAuthenticatorExtensions.bundleVersionKey: .byteString([0x31])])),
        ("bundle version as integer", .textMap([AppleAuthenticatorExtensions.bundleVersionKey: .unsigned(1)])),
        ("integer key", .map([CBORMapEntry(key: .unsigned(1), value: .text("1"))])),
        ("an array, not a map", .array([.text("apple_bundle_version_01")])),
        ("an integer, not a map", .unsigned(0)),
    ]

    @Test(arguments: badExtensions)
    func rejectsMalformedExtensions(label: String, trailing: CBORValue) {
        #expect(throws: AttestKitError.code(.authenticatorDataMalformed), "\(label)") {
            try AuthenticatorData(assertion: AuthDataBuilder.assertion(extensions: trailing))
        }
        #expect(throws: AttestKitError.code(.authenticatorDataMalformed), "\(label)") {
            try AuthenticatorData(attestation: AuthDataBuilder.attestation(extensions: trailing))
        }
    }

    @Test(arguments: [UInt8(0x40), 0xC0, 0x00, 0x05])
    func assertionExtensionsAreReadWhateverTheFlags(flags: UInt8) throws {
        let map = CBORValue.textMap([
            "future_key": .array([]),
            AppleAuthenticatorExtensions.bundleVersionKey: .text("27.1"),
            AppleAuthenticatorExtensions.validationCategoryKey: .byteString([3, 0, 0, 0]),
            "another": .unsigned(9),
        ])
        let authData = try AuthenticatorData(
            assertion: AuthDataBuilder.assertion(flags: flags, counter: 7, extensions: map))
        #expect(authData.flags.rawValue == flags && authData.signCount == 7)
        #expect(authData.attestedCredential == nil)
        #expect(
            authData.extensions
                == (try .expected(bundleVersion: "27.1", validationCategory: 3, otherKeys: ["future_key", "another"])))
    }

    /// A key Apple adds may carry a value of any CBOR type: an object of a new iOS version stays readable, its
    /// value kept uninterpreted, while a known key of another type is still refused and CBOR that is not
    /// well-formed still fails.
    @Test func unknownExtensionValuesMayBeOfEveryType() throws {
        let values: KeyValuePairs<String, CBORValue> = [
            "a_true": .simple(additionalInformation: 21, argument: 21),
            "a_null": .simple(additionalInformation: 22, argument: 22),
            "a_simple": .simple(additionalInformation: 24, argument: 255),
            "a_half": .simple(additionalInformation: 25, argument: 0x3E00),
            "a_double": .simple(additionalInformation: 27, argument: 0x3FF8_0000_0000_0000),
            "a_tag": .tagged(1, .unsigned(1_800_000_000)),
            AppleAuthenticatorExtensions.bundleVersionKey: .text("28.0"),
        ]
        let map = CBORValue.textMap(values)
        for authData in [
            try AuthenticatorData(assertion: AuthDataBuilder.assertion(extensions: map)),
            try AuthenticatorData(attestation: AuthDataBuilder.attestation(extensions: map)),
        ] {
            #expect(authData.extensions?.otherKeys == ["a_true", "a_null", "a_simple", "a_half", "a_double", "a_tag"])
            #expect(authData.extensions?.bundleVersion == "28.0")
        }
        // A known key of one of those types is malformed; so are a two-byte simple value below 32, a break, a
        // reserved additional information and a tag without its item.
        let known = CBORValue.textMap([AppleAuthenticatorExtensions.bundleVersionKey: .simple(additionalInformation: 21, argument: 21)])
        #expect(throws: AttestKitError.code(.authenticatorDataMalformed)) {
            try AuthenticatorData(assertion: AuthDataBuilder.assertion(extensions: known))
        }
        let prefix: [UInt8] = [0xA1, 0x61, 0x6B]  // {"k": …
        for value: [UInt8] in [[0xF8, 0x10], [0xFF], [0xFC], [0xC1], [0xF9, 0x3E]] {
            #expect(throws: AttestKitError.code(.cborMalformed), "\(value)") {
                try AuthenticatorData(assertion: AuthDataBuilder.assertion() + prefix + value)
            }
        }
        // Tags nested past the depth limit are refused, not followed.
        let deep = [UInt8](repeating: 0xC1, count: 40) + [0x01]
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) {
            try AuthenticatorData(assertion: AuthDataBuilder.assertion() + prefix + deep)
        }
        // Everywhere else the reader stays strict: a tag or a simple value is refused.
        for item: [UInt8] in [[0xF5], [0xC1, 0x01], [0xF9, 0x3E, 0x00]] {
            #expect(throws: AttestKitError.code(.cborMalformed)) { try CBORReader.decode(item[...]) }
        }
    }

    @Test func trailingBytesMustBeExactlyOneMap() throws {
        let map = CBOREncoder.encode(.textMap(["k": .unsigned(1)]))
        let attestation = AuthDataBuilder.attestation()
        #expect(try AuthenticatorData(attestation: attestation + map).extensions?.otherKeys == ["k"])
        for trailing in [map + map, map + [0x00], [0xFF], [0xBF, 0xFF], Array(map.dropLast())] {
            #expect(throws: AttestKitError.code(.cborMalformed)) {
                try AuthenticatorData(attestation: attestation + trailing)
            }
            #expect(throws: AttestKitError.code(.cborMalformed)) {
                try AuthenticatorData(assertion: AuthDataBuilder.assertion() + trailing)
            }
        }
    }
}

extension AppleAuthenticatorExtensions {
    /// The extensions with these values, for comparisons in tests.
    static func expected(
        bundleVersion: String?,
        validationCategory: UInt32?,
        otherKeys: [String]
    ) throws -> AppleAuthenticatorExtensions {
        var entries = [CBORMapEntry]()
        if let bundleVersion {
            entries.append(CBORMapEntry(key: .text(bundleVersionKey), value: .text(bundleVersion)))
        }
        if let validationCategory {
            entries.append(
                CBORMapEntry(key: .text(validationCategoryKey), value: .unsigned(UInt64(validationCategory))))
        }
        entries += otherKeys.map { CBORMapEntry(key: .text($0), value: .unsigned(0)) }
        return try AppleAuthenticatorExtensions(.map(entries))
    }
}
