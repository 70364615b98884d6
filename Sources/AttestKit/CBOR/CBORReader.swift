/// A strict decoder for the canonical CBOR subset that App Attest objects use.
///
/// It accepts only definite-length items of major types 0 to 5 (unsigned and negative integers,
/// byte and text strings, arrays, maps), each encoded in its shortest form. It rejects, with
/// ``AttestKitError/Code/cborMalformed``:
/// - tags (major type 6), floats, booleans, null, undefined and other simple values (major type 7), unless the
///   limits accept every type (``Limits/acceptsEveryType``, for the iOS 27 extension map: a value Apple adds of
///   one of those types must not make every object of a new iOS version unreadable); even then a simple value
///   in two bytes below 32 and the additional information 28 to 31 are refused;
/// - indefinite lengths (additional information 31) and the reserved values 28 to 30;
/// - integers, lengths and counts not in their shortest encoding;
/// - text strings that are not valid UTF-8 (overlong forms and surrogates included);
/// - maps with two equal keys;
/// - a length or count that the remaining input cannot hold (checked before anything is allocated,
///   so a declared length of 2^64 - 1 fails at once);
/// - for ``decode(_:limits:)``, any byte after the item.
///
/// Exceeding one of the ``Limits`` raises ``AttestKitError/Code/cborLimitExceeded``.
///
/// Every real attestation and assertion in the conformance vectors is canonical under these rules,
/// including the COSE key and the iOS 27 extension map inside their authenticator data, so no rule
/// is relaxed.
///
/// Byte strings are returned as slices of the input; nothing is copied byte by byte. Recursion is
/// bounded by ``Limits/maxDepth``.
package struct CBORReader {
    /// Bounds on the shape of the decoded item.
    package struct Limits: Sendable {
        /// The deepest nesting of arrays and maps; a scalar at the top has depth 0, `[[1]]` depth 2.
        package var maxDepth: Int
        /// The most elements of one array, or entries of one map.
        package var maxItemsPerContainer: Int
        /// The most data items in the whole input, map keys and values included.
        package var maxTotalItems: Int
        /// The longest byte or text string, in bytes.
        package var maxStringLength: Int
        /// Whether tags, simple values and floats are read (as ``CBORValue/tagged(_:_:)`` and
        /// ``CBORValue/simple(additionalInformation:argument:)``) rather than refused.
        package var acceptsEveryType = false

        /// Creates limits; the defaults fit App Attest objects with a wide margin.
        package init(
            maxDepth: Int = 8,
            maxItemsPerContainer: Int = 64,
            maxTotalItems: Int = 512,
            maxStringLength: Int = 16_384
        ) {
            self.maxDepth = maxDepth
            self.maxItemsPerContainer = maxItemsPerContainer
            self.maxTotalItems = maxTotalItems
            self.maxStringLength = maxStringLength
        }

        /// Depth 8, 64 items per container, 512 items in all, strings up to 16 KiB.
        package static let `default` = Limits()

        /// ``default``, accepting every type: for the iOS 27 extension map, whose values Apple may extend.
        package static let extensions: Limits = {
            var limits = Limits()
            limits.acceptsEveryType = true
            return limits
        }()
    }

    /// Maps with at most this many entries check for duplicate keys pairwise.
    private static let pairwiseKeyCheckLimit = 6

    private let input: ArraySlice<UInt8>
    private let limits: Limits
    private var position: Int
    private var itemCount = 0

    private init(input: ArraySlice<UInt8>, limits: Limits) {
        self.input = input
        self.limits = limits
        self.position = input.startIndex
    }

    /// Exactly one item spanning all of `bytes` (trailing bytes rejected).
    /// - Throws: ``AttestKitError/Code/cborMalformed`` or ``AttestKitError/Code/cborLimitExceeded``.
    package static func decode(
        _ bytes: ArraySlice<UInt8>,
        limits: Limits = .default
    ) throws(AttestKitError) -> CBORValue {
        let (value, length) = try decodePrefix(bytes, limits: limits)
        guard length == bytes.count else {
            throw AttestKitError(.cborMalformed, "\(bytes.count - length) trailing bytes after the CBOR item")
        }
        return value
    }

    /// One item at the start of `bytes`; returns it and the number of bytes it used (for the COSE key inside authData).
    /// - Throws: ``AttestKitError/Code/cborMalformed`` or ``AttestKitError/Code/cborLimitExceeded``.
    package static func decodePrefix(
        _ bytes: ArraySlice<UInt8>,
        limits: Limits = .default
    ) throws(AttestKitError) -> (value: CBORValue, length: Int) {
        var reader = CBORReader(input: bytes, limits: limits)
        let value = try reader.readItem(depth: 0)
        return (value, reader.position - bytes.startIndex)
    }

    // MARK: - Items

    private var remaining: Int { input.endIndex - position }

    /// Reads one item nested inside `depth` containers.
    private mutating func readItem(depth: Int) throws(AttestKitError) -> CBORValue {
        guard itemCount < limits.maxTotalItems else {
            throw AttestKitError(.cborLimitExceeded, "more than \(limits.maxTotalItems) CBOR items")
        }
        itemCount += 1
        guard position < input.endIndex else {
            throw AttestKitError(.cborMalformed, "the input ends where a CBOR item should start")
        }
        let initial = input[position]
        position += 1
        let major = initial >> 5
        switch major {
        case 6 where limits.acceptsEveryType:
            let tag = try readArgument(additionalInfo: initial & 0x1F)
            guard depth < limits.maxDepth else {
                throw AttestKitError(.cborLimitExceeded, "CBOR nesting deeper than \(limits.maxDepth)")
            }
            return .tagged(tag, try readItem(depth: depth + 1))
        case 7 where limits.acceptsEveryType:
            return try readSimple(additionalInfo: initial & 0x1F)
        case 6: throw AttestKitError(.cborMalformed, "CBOR tags are not accepted")
        case 7: throw AttestKitError(.cborMalformed, "CBOR floats, simple values and breaks are not accepted")
        default: break
        }
        let argument = try readArgument(additionalInfo: initial & 0x1F)
        switch major {
        case 0:
            return .unsigned(argument)
        case 1:
            return .negative(argument)
        case 2:
            return .bytes(try readString(declaredLength: argument))
        case 3:
            let utf8 = try readString(declaredLength: argument)
            guard Self.isValidUTF8(utf8) else {
                throw AttestKitError(.cborMalformed, "a CBOR text string is not valid UTF-8")
            }
            return .text(String(decoding: utf8, as: UTF8.self))
        case 4:
            let count = try containerCount(argument, bytesPerElement: 1, depth: depth)
            var elements = [CBORValue]()
            elements.reserveCapacity(count)
            for _ in 0..<count {
                elements.append(try readItem(depth: depth + 1))
            }
            return .array(elements)
        default:  // 5: only 0...7 exist, and 6 and 7 were rejected above.
            let count = try containerCount(argument, bytesPerElement: 2, depth: depth)
            var entries = [CBORMapEntry]()
            entries.reserveCapacity(count)
            // Small maps (all App Attest uses) compare keys pairwise, with no allocation; larger
            // ones hash each key once, so long equal-length keys cannot make the check quadratic.
            var seen = count > Self.pairwiseKeyCheckLimit ? Set<CBORValue>(minimumCapacity: count) : nil
            for _ in 0..<count {
                let key = try readItem(depth: depth + 1)
                let duplicate: Bool
                if seen != nil {
                    duplicate = seen?.insert(key).inserted == false
                } else {
                    duplicate = entries.contains { $0.key == key }
                }
                if duplicate {
                    throw AttestKitError(.cborMalformed, "a CBOR map has a duplicate \(key.kindName) key")
                }
                entries.append(CBORMapEntry(key: key, value: try readItem(depth: depth + 1)))
            }
            return .map(entries)
        }
    }

    /// Decodes the argument (value, length, count or tag; a simple value or a float's bits when `simple`) that
    /// follows an initial byte, rejecting indefinite lengths, reserved values and non-shortest encodings.
    private mutating func readArgument(
        additionalInfo: UInt8, simple: Bool = false
    ) throws(AttestKitError) -> UInt64 {
        let width: Int
        switch additionalInfo {
        case 0..<24: return UInt64(additionalInfo)
        case 24: width = 1
        case 25: width = 2
        case 26: width = 4
        case 27: width = 8
        case 31 where simple: throw AttestKitError(.cborMalformed, "a CBOR break outside an indefinite-length item")
        case 31: throw AttestKitError(.cborMalformed, "indefinite-length CBOR items are not accepted")
        default: throw AttestKitError(.cborMalformed, "reserved CBOR additional information \(additionalInfo)")
        }
        guard remaining >= width else {
            throw AttestKitError(.cborMalformed, "the input ends inside a CBOR argument")
        }
        var value: UInt64 = 0
        for offset in position..<(position + width) {
            value = value << 8 | UInt64(input[offset])
        }
        position += width
        // Integers, lengths and tags in their shortest form; a simple value in two bytes from 32; a float as sent
        // (RFC 8949 makes a float's shortest form a preference, not a rule).
        let smallest: UInt64 = simple ? (width == 1 ? 32 : 0) : (width == 1 ? 24 : 1 << (8 * UInt64(width / 2)))
        guard value >= smallest else {
            throw AttestKitError(
                .cborMalformed,
                simple
                    ? "a CBOR simple value below 32 is not in its one-byte form"
                    : "a CBOR integer or length is not in its shortest encoding")
        }
        return value
    }

    /// A simple value or a float (major type 7) whose initial byte was read, with its argument as sent.
    private mutating func readSimple(additionalInfo: UInt8) throws(AttestKitError) -> CBORValue {
        let argument = try readArgument(additionalInfo: additionalInfo, simple: true)
        return .simple(additionalInformation: additionalInfo, argument: argument)
    }

    /// The next `declaredLength` bytes, after checking them against the input and the limits.
    private mutating func readString(declaredLength: UInt64) throws(AttestKitError) -> ArraySlice<UInt8> {
        guard let length = Int(exactly: declaredLength), length <= remaining else {
            throw AttestKitError(
                .cborMalformed, "a CBOR string declares \(declaredLength) bytes but only \(remaining) remain")
        }
        guard length <= limits.maxStringLength else {
            throw AttestKitError(
                .cborLimitExceeded, "a CBOR string of \(length) bytes exceeds \(limits.maxStringLength)")
        }
        let string = input[position..<(position + length)]
        position += length
        return string
    }

    /// The element count of an array or map opened inside `depth` containers, after checking that
    /// the remaining input can hold it (each element takes at least `bytesPerElement` bytes) and the limits.
    private func containerCount(
        _ declaredCount: UInt64,
        bytesPerElement: Int,
        depth: Int
    ) throws(AttestKitError) -> Int {
        guard depth < limits.maxDepth else {
            throw AttestKitError(.cborLimitExceeded, "CBOR nesting deeper than \(limits.maxDepth)")
        }
        guard let count = Int(exactly: declaredCount), count <= remaining / bytesPerElement else {
            throw AttestKitError(
                .cborMalformed, "a CBOR container declares \(declaredCount) elements but only \(remaining) bytes remain"
            )
        }
        guard count <= limits.maxItemsPerContainer else {
            throw AttestKitError(
                .cborLimitExceeded, "a CBOR container of \(count) elements exceeds \(limits.maxItemsPerContainer)")
        }
        return count
    }

    /// Whether `bytes` is well-formed UTF-8: no overlong forms, surrogates or values above U+10FFFF.
    private static func isValidUTF8(_ bytes: ArraySlice<UInt8>) -> Bool {
        if bytes.allSatisfy({ $0 < 0x80 }) { return true }
        var iterator = bytes.makeIterator()
        var decoder = Unicode.UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
