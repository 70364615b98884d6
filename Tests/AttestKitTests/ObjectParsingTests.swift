import AttestKitTesting
import Testing

@testable import AttestKit

@Suite struct ObjectParsingTests {
    static let attestationName = "apple_doc_sample_2024_prod_attestation"
    static let assertionName = "veehaitch_ios-14.4_assertion"

    /// A real object as decoded CBOR, for building variants.
    static func decoded(_ name: String) -> CBORValue {
        (try? CBORReader.decode(TestVectors.named(name).bytes[...])) ?? .map([])
    }

    static let attestation = decoded(attestationName)
    static let assertion = decoded(assertionName)
    static let statement = attestation[text: "attStmt"] ?? .map([])
    static let certificate = statement[text: "x5c"]?.arrayValue?.first ?? .byteString([])

    static func withStatement(_ key: String, _ value: CBORValue?) -> CBORValue {
        attestation.setting("attStmt", to: statement.setting(key, to: value))
    }

    // MARK: real objects

    @Test(arguments: TestVectors.kind("attestation"))
    func everyRealAttestationParses(vector: TestVector) throws {
        let object = try AttestationObject(bytes: vector.bytes)
        let raw = try CBORReader.decode(vector.bytes[...])
        #expect(object.format == "apple-appattest")
        #expect(object.certificates.count == 2)
        #expect(object.certificates.allSatisfy { $0.first == 0x30 })
        #expect(object.authenticatorData.bytes == raw[text: "authData"]?.bytesValue.map(Array.init))
        #expect(object.authenticatorData.attestedCredential != nil)
        // One real vector was reassembled with an empty receipt; every other one carries a CMS receipt.
        if vector.name == "oliverbinns_components_dev_REASSEMBLED_no_receipt" {
            #expect(raw[text: "attStmt"]?[text: "receipt"]?.bytesValue?.isEmpty == true)
            #expect(object.receipt == nil)
        } else {
            #expect(object.receipt?.first == 0x30)
        }
    }

    @Test(arguments: TestVectors.kind("assertion"))
    func everyRealAssertionParses(vector: TestVector) throws {
        let object = try AssertionObject(bytes: vector.bytes)
        #expect(object.signature.first == 0x30 && (70...72).contains(object.signature.count))
        #expect(object.authenticatorData.bytes.count == 37)
        #expect(Int(object.authenticatorData.signCount) == vector.expectedCounter)
    }

    // MARK: truncation and trailing bytes

    @Test(arguments: [attestationName, "apple_doc_sample_2026_prod_attestation"])
    func everyPrefixOfAnAttestationIsRejected(name: String) {
        let bytes = TestVectors.named(name).bytes
        for length in 0..<bytes.count {
            #expect(throws: AttestKitError.code(.cborMalformed), "prefix of \(length) bytes") {
                try AttestationObject(bytes: bytes[..<length])
            }
        }
    }

    @Test func everyPrefixOfAnAssertionIsRejected() {
        let bytes = TestVectors.named(Self.assertionName).bytes
        for length in 0..<bytes.count {
            #expect(throws: AttestKitError.code(.cborMalformed), "prefix of \(length) bytes") {
                try AssertionObject(bytes: bytes[..<length])
            }
        }
    }

    @Test(arguments: [[UInt8]([0x00]), [0xFF], [0xA0], [0x00, 0x00, 0x00, 0x00]])
    func trailingBytesAreRejected(trailing: [UInt8]) {
        #expect(throws: AttestKitError.code(.cborMalformed)) {
            try AttestationObject(bytes: TestVectors.named(Self.attestationName).bytes + trailing)
        }
        #expect(throws: AttestKitError.code(.cborMalformed)) {
            try AssertionObject(bytes: TestVectors.named(Self.assertionName).bytes + trailing)
        }
    }

    // MARK: shape of the attestation

    static let badAttestations: [(String, CBORValue, AttestKitError.Code)] = [
        ("not a map", .array([attestation]), .attestationMalformed),
        ("a byte string", .byteString([0xA0]), .attestationMalformed),
        ("fmt missing", attestation.setting("fmt", to: nil), .attestationMalformed),
        (
            "fmt as bytes", attestation.setting("fmt", to: .byteString(Array("apple-appattest".utf8))),
            .attestationMalformed
        ),
        ("fmt as integer", attestation.setting("fmt", to: .unsigned(1)), .attestationMalformed),
        ("fmt packed", attestation.setting("fmt", to: .text("packed")), .unsupportedFormat),
        ("fmt with a trailing space", attestation.setting("fmt", to: .text("apple-appattest ")), .unsupportedFormat),
        (
            "a packed attestation",
            .textMap([
                "fmt": .text("packed"), "attStmt": .textMap(["alg": .integer(-7), "sig": .byteString([1])]),
                "authData": .byteString([]),
            ]),
            .unsupportedFormat
        ),
        ("attStmt missing", attestation.setting("attStmt", to: nil), .attestationMalformed),
        ("attStmt as bytes", attestation.setting("attStmt", to: .byteString([])), .attestationMalformed),
        ("attStmt as array", attestation.setting("attStmt", to: .array([])), .attestationMalformed),
        ("attStmt with an unknown key", withStatement("alg", .integer(-7)), .attestationMalformed),
        (
            "attStmt with an integer key",
            attestation.setting(
                "attStmt", to: .map((statement.mapValue ?? []) + [CBORMapEntry(key: .unsigned(1), value: .unsigned(1))])
            ), .attestationMalformed
        ),
        ("x5c missing", withStatement("x5c", nil), .attestationMalformed),
        ("x5c as bytes", withStatement("x5c", certificate), .attestationMalformed),
        ("x5c empty", withStatement("x5c", .array([])), .attestationMalformed),
        (
            "x5c with 5 certificates", withStatement("x5c", .array(.init(repeating: certificate, count: 5))),
            .attestationMalformed
        ),
        ("x5c entry as text", withStatement("x5c", .array([certificate, .text("MIIC")])), .attestationMalformed),
        ("x5c entry empty", withStatement("x5c", .array([certificate, .byteString([])])), .attestationMalformed),
        ("x5c entry as array", withStatement("x5c", .array([.array([certificate])])), .attestationMalformed),
        ("receipt as text", withStatement("receipt", .text("")), .attestationMalformed),
        ("receipt as array", withStatement("receipt", .array([])), .attestationMalformed),
        ("authData missing", attestation.setting("authData", to: nil), .attestationMalformed),
        ("authData as text", attestation.setting("authData", to: .text("")), .attestationMalformed),
        ("authData as map", attestation.setting("authData", to: .map([])), .attestationMalformed),
        (
            "authData of 36 bytes", attestation.setting("authData", to: .byteString(.init(repeating: 0, count: 36))),
            .authenticatorDataMalformed
        ),
        (
            "authData with a 16-byte credential id",
            attestation.setting(
                "authData", to: .byteString(AuthDataBuilder.attestation(credentialID: .init(repeating: 1, count: 16)))),
            .authenticatorDataMalformed
        ),
        (
            "authData of an assertion", attestation.setting("authData", to: .byteString(AuthDataBuilder.assertion())),
            .authenticatorDataMalformed
        ),
        ("an unknown top-level key", attestation.setting("extra", to: .unsigned(0)), .attestationMalformed),
        (
            "an integer top-level key",
            .map((attestation.mapValue ?? []) + [CBORMapEntry(key: .unsigned(0), value: .unsigned(0))]),
            .attestationMalformed
        ),
        (
            "a duplicate fmt key",
            .map((attestation.mapValue ?? []) + [CBORMapEntry(key: .text("fmt"), value: .text("apple-appattest"))]),
            .cborMalformed
        ),
        (
            "a receipt over the string limit",
            withStatement("receipt", .byteString(.init(repeating: 0x30, count: 16_385))), .cborLimitExceeded
        ),
    ]

    @Test(arguments: badAttestations)
    func rejectsMalformedAttestation(label: String, object: CBORValue, code: AttestKitError.Code) {
        #expect(throws: AttestKitError.code(code), "\(label)") {
            try AttestationObject(bytes: CBOREncoder.encode(object))
        }
    }

    @Test func acceptsOptionalAndReorderedParts() throws {
        let real = try AttestationObject(bytes: CBOREncoder.encode(Self.attestation))
        #expect(try AttestationObject(bytes: CBOREncoder.encode(Self.withStatement("receipt", nil))).receipt == nil)
        #expect(
            try AttestationObject(bytes: CBOREncoder.encode(Self.withStatement("receipt", .byteString([])))).receipt
                == nil)
        let one = try AttestationObject(
            bytes: CBOREncoder.encode(Self.withStatement("x5c", .array([Self.certificate]))))
        #expect(one.certificates == [real.certificates[0]])
        let four = try AttestationObject(
            bytes: CBOREncoder.encode(Self.withStatement("x5c", .array(.init(repeating: Self.certificate, count: 4)))))
        #expect(four.certificates.count == 4)
        let reordered = CBORValue.map((Self.attestation.mapValue ?? []).reversed())
        let parsed = try AttestationObject(bytes: CBOREncoder.encode(reordered))
        #expect(parsed.certificates == real.certificates && parsed.receipt == real.receipt)
        #expect(parsed.authenticatorData == real.authenticatorData)
    }

    // MARK: shape of the assertion

    static let signature = assertion[text: "signature"] ?? .byteString([])

    static let badAssertions: [(String, CBORValue, AttestKitError.Code)] = [
        ("not a map", .array([assertion]), .assertionMalformed),
        ("empty map", .map([]), .assertionMalformed),
        ("signature missing", assertion.setting("signature", to: nil), .assertionMalformed),
        ("signature as text", assertion.setting("signature", to: .text("MEUC")), .assertionMalformed),
        ("signature as integer", assertion.setting("signature", to: .unsigned(0)), .assertionMalformed),
        ("authenticatorData missing", assertion.setting("authenticatorData", to: nil), .assertionMalformed),
        ("authenticatorData as array", assertion.setting("authenticatorData", to: .array([])), .assertionMalformed),
        (
            "authenticatorData of 36 bytes",
            assertion.setting("authenticatorData", to: .byteString(.init(repeating: 0, count: 36))),
            .authenticatorDataMalformed
        ),
        (
            "authenticatorData followed by a non-map",
            assertion.setting("authenticatorData", to: .byteString(AuthDataBuilder.assertion() + [0x01])),
            .authenticatorDataMalformed
        ),
        ("an unknown key", assertion.setting("authData", to: .byteString([])), .assertionMalformed),
        (
            "an integer key", .map((assertion.mapValue ?? []) + [CBORMapEntry(key: .integer(-1), value: signature)]),
            .assertionMalformed
        ),
        (
            "a duplicate signature key",
            .map((assertion.mapValue ?? []) + [CBORMapEntry(key: .text("signature"), value: signature)]), .cborMalformed
        ),
    ]

    @Test(arguments: badAssertions)
    func rejectsMalformedAssertion(label: String, object: CBORValue, code: AttestKitError.Code) {
        #expect(throws: AttestKitError.code(code), "\(label)") {
            try AssertionObject(bytes: CBOREncoder.encode(object))
        }
    }

    @Test func assertionWithExtensionsAndReorderedKeys() throws {
        let extensions = CBORValue.textMap([AppleAuthenticatorExtensions.validationCategoryKey: .unsigned(2)])
        let object = CBORValue.textMap([
            "authenticatorData": .byteString(
                AuthDataBuilder.assertion(flags: 0x40, counter: 9, extensions: extensions)),
            "signature": Self.signature,
        ])
        let parsed = try AssertionObject(bytes: CBOREncoder.encode(object))
        #expect(parsed.signature == Self.signature.bytesValue.map(Array.init))
        #expect(parsed.authenticatorData.signCount == 9)
        #expect(parsed.authenticatorData.extensions?.validationCategory == 2)
    }

    // MARK: size caps

    @Test func inputSizeCaps() {
        #expect(throws: AttestKitError.code(.inputTooLarge)) {
            try AttestationObject(bytes: [UInt8](repeating: 0xA0, count: 65_537))
        }
        #expect(throws: AttestKitError.code(.cborMalformed)) {
            try AttestationObject(bytes: [UInt8](repeating: 0xA0, count: 65_536))
        }
        #expect(throws: AttestKitError.code(.inputTooLarge)) {
            try AssertionObject(bytes: [UInt8](repeating: 0xA0, count: 4097))
        }
        #expect(throws: AttestKitError.code(.cborMalformed)) {
            try AssertionObject(bytes: [UInt8](repeating: 0xA0, count: 4096))
        }
    }

    // MARK: bit flips

    /// Flipping any single bit of a real assertion never crashes. A flip inside the signature or the
    /// authenticator data (whose header bytes may take any value) still parses and is seen; a flip
    /// in the CBOR structure or a key name is rejected.
    @Test func singleBitFlipsOfAnAssertion() throws {
        let bytes = TestVectors.named(Self.assertionName).bytes
        let signatureRange = try #require(Self.assertion[text: "signature"]?.bytesValue?.indices)
        let authDataRange = try #require(Self.assertion[text: "authenticatorData"]?.bytesValue?.indices)
        for index in bytes.indices {
            for bit in 0..<8 {
                var flipped = bytes
                flipped[index] ^= 1 << bit
                let result = Result { () throws(AttestKitError) in try AssertionObject(bytes: flipped) }
                if signatureRange.contains(index) {
                    let parsed = try result.get()
                    #expect(parsed.signature == Array(flipped[signatureRange]))
                } else if authDataRange.contains(index) {
                    let parsed = try result.get()
                    #expect(parsed.authenticatorData.bytes == Array(flipped[authDataRange]))
                } else {
                    #expect(throws: AttestKitError.self, "flip of bit \(bit) at \(index)") { try result.get() }
                }
            }
        }
    }

    /// Seeded random single-bit flips across a whole real attestation, plus every bit of its CBOR
    /// structure and authenticator data: never a crash, only typed format errors; flips inside the
    /// certificates and the receipt (opaque to the parser) parse and are seen.
    @Test func singleBitFlipsOfAnAttestation() throws {
        let bytes = TestVectors.named("apple_doc_sample_2026_prod_attestation").bytes
        let object = try CBORReader.decode(bytes[...])
        let statement = try #require(object[text: "attStmt"])
        let certificateRanges = try #require(statement[text: "x5c"]?.arrayValue).compactMap { $0.bytesValue?.indices }
        let receiptRange = try #require(statement[text: "receipt"]?.bytesValue?.indices)
        let opaque = certificateRanges + [receiptRange]

        var generator = SeededGenerator(seed: 0x4154_5445_5354)
        var positions = bytes.indices.filter { index in !opaque.contains { $0.contains(index) } }
            .flatMap { index in (0..<8).map { (index, $0) } }
        positions += (0..<3000).map { _ in (Int(generator.next() % UInt64(bytes.count)), Int(generator.next() % 8)) }

        var parsed = 0
        var rejected = 0
        for (index, bit) in positions {
            var flipped = bytes
            flipped[index] ^= 1 << bit
            do {
                let attestation = try AttestationObject(bytes: flipped)
                parsed += 1
                if let certificate = certificateRanges.firstIndex(where: { $0.contains(index) }) {
                    #expect(attestation.certificates[certificate] == Array(flipped[certificateRanges[certificate]]))
                } else if receiptRange.contains(index) {
                    #expect(attestation.receipt == Array(flipped[receiptRange]))
                }
            } catch {
                rejected += 1
                #expect(error.check == .format)
                #expect(!opaque.contains { $0.contains(index) }, "a flip inside opaque DER at \(index) was rejected")
            }
        }
        #expect(parsed > 0 && rejected > 0)
    }
}
