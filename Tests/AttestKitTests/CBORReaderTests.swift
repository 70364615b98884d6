import Testing

@testable import AttestKit

/// Bytes from hex; records an issue for a typo in a test's hex.
func hexBytes(_ hex: String, sourceLocation: SourceLocation = #_sourceLocation) -> [UInt8] {
    guard let bytes = Hex.decode(hex.filter { !$0.isWhitespace }) else {
        Issue.record("bad hex in test: \(hex)", sourceLocation: sourceLocation)
        return []
    }
    return bytes
}

@Suite struct CBORReaderTests {
    // MARK: accepted items

    static let accepted: [(String, CBORValue)] = [
        ("00", .unsigned(0)),
        ("17", .unsigned(23)),
        ("1818", .unsigned(24)),
        ("18ff", .unsigned(255)),
        ("190100", .unsigned(256)),
        ("1a00010000", .unsigned(65_536)),
        ("1b0000000100000000", .unsigned(1 << 32)),
        ("1bffffffffffffffff", .unsigned(.max)),
        ("20", .negative(0)),
        ("26", .negative(6)),
        ("3bffffffffffffffff", .negative(.max)),
        ("40", .byteString([])),
        ("4401020304", .byteString([1, 2, 3, 4])),
        ("60", .text("")),
        ("6449455446", .text("IETF")),
        ("62c3bc", .text("ü")),
        ("64f0908591", .text("\u{10151}")),
        ("80", .array([])),
        (
            "8301820203820405",
            .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])
        ),
        ("a0", .map([])),
        (
            "a201020304",
            .map([
                CBORMapEntry(key: .unsigned(1), value: .unsigned(2)),
                CBORMapEntry(key: .unsigned(3), value: .unsigned(4)),
            ])
        ),
        // Input order is kept, even when it is not the canonical sort order.
        ("a2616202616101", .textMap(["b": .unsigned(2), "a": .unsigned(1)])),
    ]

    @Test(arguments: accepted)
    func decodesCanonicalItem(hex: String, expected: CBORValue) throws {
        #expect(try CBORReader.decode(hexBytes(hex)[...]) == expected)
    }

    // MARK: rejected items

    static let malformed: [(String, String)] = [
        ("empty input", ""),
        ("trailing byte", "0000"),
        ("trailing bytes after a map", "a0ff"),
        ("duplicate text keys", "a2616101616102"),
        ("duplicate integer keys", "a201000101"),
        ("duplicate negative keys", "a2200020 01"),
        ("indefinite byte string", "5f4101ff"),
        ("indefinite text string", "7f6161ff"),
        ("indefinite array", "9f01ff"),
        ("indefinite map", "bf616101ff"),
        ("indefinite unsigned", "1f"),
        ("tag 0", "c074323031332d30332d32315432303a30343a30305a"),
        ("tag 24", "d81840"),
        ("bignum tag", "c249010000000000000000"),
        ("half float", "f97c00"),
        ("single float", "fa47c35000"),
        ("double float", "fb3ff0000000000000"),
        ("false", "f4"),
        ("true", "f5"),
        ("null", "f6"),
        ("undefined", "f7"),
        ("simple 32", "f820"),
        ("break", "ff"),
        ("float as map value", "a16161f93c00"),
        ("reserved 28", "1c"),
        ("reserved 29", "3d"),
        ("reserved 30", "5e"),
        ("reserved 28 array", "9c"),
        ("non-minimal 1-byte int", "1817"),
        ("non-minimal 2-byte int", "1900ff"),
        ("non-minimal 4-byte int", "1a0000ffff"),
        ("non-minimal 8-byte int", "1b00000000ffffffff"),
        ("non-minimal negative", "3817"),
        ("non-minimal bstr length", "5801ff"),
        ("non-minimal text length", "780161"),
        ("non-minimal empty bstr", "590000"),
        ("non-minimal array count", "980100"),
        ("non-minimal map count", "b8010000"),
        ("UTF-8 0xFF", "61ff"),
        ("UTF-8 lone continuation", "6180"),
        ("UTF-8 truncated sequence", "61c3"),
        ("UTF-8 overlong NUL", "62c080"),
        ("UTF-8 overlong slash", "63e080af"),
        ("UTF-8 surrogate", "63eda080"),
        ("UTF-8 above U+10FFFF", "64f4908080"),
        ("invalid UTF-8 map key", "a161ff00"),
        ("truncated 1-byte argument", "18"),
        ("truncated 8-byte argument", "1b000000"),
        ("truncated byte string", "4201"),
        ("truncated text", "6261"),
        ("truncated array", "8201"),
        ("truncated map value", "a101"),
        ("bstr declaring 2^32 bytes", "5b000000010000000000"),
        ("bstr declaring 2^64-1 bytes", "5bffffffffffffffff00"),
        ("text declaring 2^64-1 bytes", "7bffffffffffffffff00"),
        ("bstr declaring 2^32 bytes in 4", "5affffffff00"),
        ("array declaring 2^32 items", "9b000000010000000000"),
        ("array declaring 2^64-1 items", "9bffffffffffffffff00"),
        ("map declaring 2^64-1 entries", "bbffffffffffffffff00"),
        ("map declaring more entries than bytes can hold", "a3010203"),
    ]

    @Test(arguments: malformed)
    func rejectsMalformed(label: String, hex: String) {
        #expect(throws: AttestKitError.code(.cborMalformed), "\(label)") {
            try CBORReader.decode(hexBytes(hex)[...])
        }
    }

    /// Maps of every size find a duplicate key wherever it is: small maps compare pairwise, larger
    /// ones through a hash set, and long keys differing only in their last byte are distinct.
    @Test(arguments: [2, 6, 7, 64])
    func duplicateKeysInMapsOfAnySize(count: Int) throws {
        func key(_ index: Int) -> CBORValue { .byteString([UInt8](repeating: 0x5A, count: 300) + [UInt8(index)]) }
        let distinct = CBORValue.map((0..<count).map { CBORMapEntry(key: key($0), value: .unsigned(UInt64($0))) })
        let decoded = try CBORReader.decode(CBOREncoder.encode(distinct)[...])
        #expect(decoded == distinct)
        #expect(decoded[key(count - 1)] == .unsigned(UInt64(count - 1)))
        for duplicateOf in Set([0, (count - 1) / 2, count - 2]) {
            var entries = distinct.mapValue ?? []
            entries[count - 1] = CBORMapEntry(key: key(duplicateOf), value: .unsigned(0))
            #expect(throws: AttestKitError.code(.cborMalformed)) {
                try CBORReader.decode(CBOREncoder.encode(.map(entries))[...])
            }
        }
    }

    /// Text keys are compared as encoded bytes, not by Unicode canonical equivalence (under which
    /// U+212A KELVIN SIGN equals "K"): such keys are distinct and looked up exactly.
    @Test(arguments: [1, 7])
    func textKeysCompareByteForByte(padding: Int) throws {
        let filler = (0..<padding).map { CBORMapEntry(key: .unsigned(UInt64($0)), value: .unsigned(0)) }
        let map = CBORValue.map(
            filler + [
                CBORMapEntry(key: .text("K"), value: .unsigned(1)),
                CBORMapEntry(key: .text("\u{212A}"), value: .unsigned(2)),
                CBORMapEntry(key: .text("\u{E9}"), value: .unsigned(3)),
                CBORMapEntry(key: .text("e\u{301}"), value: .unsigned(4)),
            ])
        let decoded = try CBORReader.decode(CBOREncoder.encode(map)[...])
        #expect(decoded[text: "K"] == .unsigned(1) && decoded[text: "\u{212A}"] == .unsigned(2))
        #expect(decoded[text: "\u{E9}"] == .unsigned(3) && decoded[text: "e\u{301}"] == .unsigned(4))
        #expect(CBORValue.text("K") != .text("\u{212A}"))
        #expect(Set([CBORValue.text("K"), .text("\u{212A}"), .text("K")]).count == 2)
    }

    /// Declared lengths far beyond the input fail before anything is allocated: a reader that
    /// allocated first would trap or exhaust memory on 2^32 and 2^64-1.
    @Test(arguments: [
        "5b000000010000000000", "5bffffffffffffffff00", "7b000000010000000000", "9bffffffffffffffff00",
        "bb0000000100000000a0",
    ])
    func hugeDeclaredLengthsFailFast(hex: String) {
        let input = hexBytes(hex)[...]
        for _ in 0..<1000 {
            #expect(throws: AttestKitError.code(.cborMalformed)) { try CBORReader.decode(input) }
        }
    }

    /// The input-length check comes first and does not depend on the limits: with every limit
    /// lifted, a huge declared length or count still fails at once instead of reserving memory.
    @Test(arguments: [
        "5bffffffffffffffff00", "5a7fffffff00", "9b7fffffffffffffff00", "9a7fffffff00", "ba7fffffff0000", "984100",
        "b841000000",
    ])
    func declaredSizesAreCheckedAgainstTheInputBeforeTheLimits(hex: String) {
        let unlimited = CBORReader.Limits(
            maxDepth: 8, maxItemsPerContainer: .max, maxTotalItems: .max, maxStringLength: .max)
        #expect(throws: AttestKitError.code(.cborMalformed)) {
            try CBORReader.decode(hexBytes(hex)[...], limits: unlimited)
        }
        #expect(throws: AttestKitError.code(.cborMalformed)) { try CBORReader.decode(hexBytes(hex)[...]) }
    }

    // MARK: limits

    static func nestedArrays(_ depth: Int) -> [UInt8] { [UInt8](repeating: 0x81, count: depth) + [0x00] }

    @Test func nestingUpToTheLimitIsAccepted() throws {
        var value = try CBORReader.decode(Self.nestedArrays(8)[...])
        for _ in 0..<8 { value = try #require(value.arrayValue?.first) }
        #expect(value == .unsigned(0))
        _ = try CBORReader.decode([0xA1, 0x00, 0xA1, 0x00, 0x80][...], limits: .init(maxDepth: 3))
    }

    @Test(arguments: [9, 10, 64, 4096])
    func nestingBeyondTheLimitIsRejected(depth: Int) {
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) {
            try CBORReader.decode(Self.nestedArrays(depth)[...])
        }
        let maps =
            [UInt8](repeating: 0xA1, count: 1)
            + Array([[UInt8]](repeating: [0x00, 0xA1], count: depth - 1).joined()) + [0x00, 0x00]
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) { try CBORReader.decode(maps[...]) }
    }

    @Test func itemsPerContainerLimit() throws {
        let sixtyFour = CBOREncoder.head(4, 64) + [UInt8](repeating: 0, count: 64)
        #expect(try CBORReader.decode(sixtyFour[...]).arrayValue?.count == 64)
        let sixtyFive = CBOREncoder.head(4, 65) + [UInt8](repeating: 0, count: 65)
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) { try CBORReader.decode(sixtyFive[...]) }
        let bigMap = CBOREncoder.head(5, 65) + (0..<65).flatMap { CBOREncoder.head(0, UInt64($0)) + [0x00] }
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) { try CBORReader.decode(bigMap[...]) }
    }

    @Test func totalItemsLimit() throws {
        // [[0 × 63] × 8] has 1 + 8 × 64 = 513 items; [[0 × 63] × 7] has 449.
        func nested(_ count: Int) -> [UInt8] {
            CBOREncoder.head(4, UInt64(count))
                + Array(
                    [[UInt8]](repeating: CBOREncoder.head(4, 63) + [UInt8](repeating: 0, count: 63), count: count)
                        .joined())
        }
        #expect(try CBORReader.decode(nested(7)[...]).arrayValue?.count == 7)
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) { try CBORReader.decode(nested(8)[...]) }
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) {
            try CBORReader.decode([0x82, 0x00, 0x00][...], limits: .init(maxTotalItems: 2))
        }
    }

    @Test func stringLengthLimit() throws {
        let atLimit = CBOREncoder.head(2, 16_384) + [UInt8](repeating: 7, count: 16_384)
        #expect(try CBORReader.decode(atLimit[...]).bytesValue?.count == 16_384)
        let overLimit = CBOREncoder.head(2, 16_385) + [UInt8](repeating: 7, count: 16_385)
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) { try CBORReader.decode(overLimit[...]) }
        let text = CBOREncoder.head(3, 5) + Array("hello".utf8)
        #expect(throws: AttestKitError.code(.cborLimitExceeded)) {
            try CBORReader.decode(text[...], limits: .init(maxStringLength: 4))
        }
    }

    // MARK: prefix decoding, slices and accessors

    @Test func decodePrefixReportsTheLengthUsed() throws {
        let input = hexBytes("ff 8201 02 0304")[1...]
        let (value, length) = try CBORReader.decodePrefix(input)
        #expect(value == .array([.unsigned(1), .unsigned(2)]))
        #expect(length == 3)
        #expect(throws: AttestKitError.code(.cborMalformed)) { try CBORReader.decode(input) }
    }

    @Test func byteStringsAreSlicesOfTheInput() throws {
        let storage = hexBytes("eeee 43 010203")
        let value = try CBORReader.decode(storage[2...])
        let slice = try #require(value.bytesValue)
        #expect(slice.startIndex == 3 && slice.endIndex == 6)
        #expect(Array(slice) == [1, 2, 3])
    }

    @Test func accessors() throws {
        let map = try CBORReader.decode(hexBytes("a4 6161 01 20 626162 626162 420102 0a 80")[...])
        #expect(map[text: "a"] == .unsigned(1))
        #expect(map[int: -1]?.textValue == "ab")
        #expect(map[text: "ab"]?.bytesValue.map(Array.init) == [1, 2])
        #expect(map[int: 10]?.arrayValue == [])
        #expect(map[text: "missing"] == nil && map[int: 1] == nil)
        #expect(map.mapValue?.count == 4 && map.arrayValue == nil && map.textValue == nil && map.bytesValue == nil)
        #expect(CBORValue.unsigned(5)[text: "a"] == nil)
    }

    @Test(arguments: [
        (CBORValue.unsigned(0), Int64?.some(0)),
        (.unsigned(UInt64(Int64.max)), .some(.max)),
        (.unsigned(UInt64(Int64.max) + 1), nil),
        (.negative(0), .some(-1)),
        (.negative(6), .some(-7)),
        (.negative(UInt64(Int64.max)), .some(.min)),
        (.negative(UInt64(Int64.max) + 1), nil),
        (.text("1"), nil),
    ])
    func int64Value(value: CBORValue, expected: Int64?) {
        #expect(value.int64Value == expected)
        if let expected { #expect(CBORValue.integer(expected) == value) }
    }

    // MARK: real objects

    static let realObjects = TestVectors.kind("attestation") + TestVectors.kind("assertion")

    /// Every real object is canonical under the reader's rules, and re-encoding gives the same bytes.
    @Test(arguments: realObjects)
    func realObjectsAreCanonical(vector: TestVector) throws {
        let bytes = vector.bytes
        let value = try CBORReader.decode(bytes[...])
        #expect(CBOREncoder.encode(value) == bytes)
    }
}
