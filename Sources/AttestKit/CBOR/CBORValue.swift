/// One decoded CBOR data item: what App Attest uses (RFC 8949 major types 0 to 5), and tags, simple values and
/// floats where the reader is told to accept every type (``CBORReader/Limits/acceptsEveryType``: the values of
/// the iOS 27 extension map, which Apple may extend).
///
/// ``CBORReader`` never produces indefinite-length items. Byte strings are slices of the reader's input, so
/// decoding does not copy their contents: keep the input alive only as long as the values (slices share its
/// storage).
package enum CBORValue: Sendable, Hashable {
    /// Major type 0: an unsigned integer.
    case unsigned(UInt64)
    /// Major type 1: the integer `-1 - n`, stored as `n`.
    case negative(UInt64)
    /// Major type 2: a byte string, as a slice of the decoded input.
    case bytes(ArraySlice<UInt8>)
    /// Major type 3: a text string (valid UTF-8).
    case text(String)
    /// Major type 4: an array.
    case array([CBORValue])
    /// Major type 5: a map, with its entries in input order. Keys are unique.
    case map([CBORMapEntry])
    /// Major type 6: a tag number and the item it tags.
    indirect case tagged(UInt64, CBORValue)
    /// Major type 7: a simple value (`false` 20, `true` 21, `null` 22, `undefined` 23, or another) or a float, by
    /// its additional information (0 to 27) and its argument (the simple value, or the float's bits as sent).
    case simple(additionalInformation: UInt8, argument: UInt64)
}

extension CBORValue {
    /// Equality of the encoded data: text strings compare byte for byte (not by Unicode canonical
    /// equivalence, as `String` does), so a map cannot hold two keys that differ only in form, and
    /// a lookup by key never matches a differently encoded one.
    package static func == (lhs: CBORValue, rhs: CBORValue) -> Bool {
        switch (lhs, rhs) {
        case (.unsigned(let a), .unsigned(let b)), (.negative(let a), .negative(let b)): a == b
        case (.bytes(let a), .bytes(let b)): a == b
        case (.text(let a), .text(let b)): sameUTF8(a, b)
        case (.array(let a), .array(let b)): a == b
        case (.map(let a), .map(let b)): a == b
        case (.tagged(let tagA, let a), .tagged(let tagB, let b)): tagA == tagB && a == b
        case (.simple(let infoA, let a), .simple(let infoB, let b)): infoA == infoB && a == b
        default: false
        }
    }

    /// Whether two strings have the same UTF-8 bytes.
    private static func sameUTF8(_ a: String, _ b: String) -> Bool {
        a.utf8.count == b.utf8.count && a.utf8.elementsEqual(b.utf8)
    }

    /// Hashes the encoded data, consistently with ``==(_:_:)``, eight bytes at a time for strings.
    package func hash(into hasher: inout Hasher) {
        switch self {
        case .unsigned(let n): hasher.combine(0 as UInt8); hasher.combine(n)
        case .negative(let n): hasher.combine(1 as UInt8); hasher.combine(n)
        case .bytes(let bytes): hasher.combine(2 as UInt8); Self.combine(bytes, into: &hasher)
        case .text(let text): hasher.combine(3 as UInt8); Self.combine(text.utf8, into: &hasher)
        case .array(let elements): hasher.combine(4 as UInt8); hasher.combine(elements)
        case .map(let entries): hasher.combine(5 as UInt8); hasher.combine(entries)
        case .tagged(let tag, let value): hasher.combine(6 as UInt8); hasher.combine(tag); hasher.combine(value)
        case .simple(let info, let argument): hasher.combine(7 as UInt8); hasher.combine(info); hasher.combine(argument)
        }
    }

    /// Feeds the length and then the bytes, packed into 64-bit words, to `hasher`.
    private static func combine(_ bytes: some Collection<UInt8>, into hasher: inout Hasher) {
        hasher.combine(bytes.count)
        var word: UInt64 = 0
        var filled = 0
        for byte in bytes {
            word = word << 8 | UInt64(byte)
            filled += 1
            if filled == 8 {
                hasher.combine(word)
                (word, filled) = (0, 0)
            }
        }
        if filled > 0 { hasher.combine(word) }
    }
}

/// One key/value pair of a ``CBORValue/map(_:)``.
package struct CBORMapEntry: Sendable, Hashable {
    /// The entry's key.
    package let key: CBORValue
    /// The entry's value.
    package let value: CBORValue

    /// Creates a map entry.
    package init(key: CBORValue, value: CBORValue) {
        self.key = key
        self.value = value
    }
}

extension CBORValue {
    /// The integer `value` as a CBOR integer item (major type 0 when non-negative, else major type 1).
    package static func integer(_ value: Int64) -> CBORValue {
        // For a negative value, -1 - value == ~value, which never overflows (~Int64.min == Int64.max).
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(~value))
    }

    /// The value stored under the text key `key`, when this is a map holding that key.
    package subscript(text key: String) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        for entry in entries {
            if case .text(let text) = entry.key, Self.sameUTF8(text, key) { return entry.value }
        }
        return nil
    }

    /// The value stored under the integer key `key`, when this is a map holding that key.
    package subscript(int key: Int64) -> CBORValue? {
        self[.integer(key)]
    }

    /// The value stored under `key`, when this is a map holding that key.
    package subscript(key: CBORValue) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first(where: { $0.key == key })?.value
    }

    /// The contents of a byte string, else `nil`.
    package var bytesValue: ArraySlice<UInt8>? {
        guard case .bytes(let bytes) = self else { return nil }
        return bytes
    }

    /// The contents of a text string, else `nil`.
    package var textValue: String? {
        guard case .text(let text) = self else { return nil }
        return text
    }

    /// The elements of an array, else `nil`.
    package var arrayValue: [CBORValue]? {
        guard case .array(let elements) = self else { return nil }
        return elements
    }

    /// The entries of a map, in input order, else `nil`.
    package var mapValue: [CBORMapEntry]? {
        guard case .map(let entries) = self else { return nil }
        return entries
    }

    /// The value of an unsigned or negative integer when it fits in `Int64`, else `nil`.
    package var int64Value: Int64? {
        switch self {
        case .unsigned(let n):
            return Int64(exactly: n)
        case .negative(let n):
            guard let magnitude = Int64(exactly: n) else { return nil }
            return ~magnitude  // -1 - n
        default:
            return nil
        }
    }

    /// Checks that this is a map whose keys are all text strings from `allowed`.
    ///
    /// Used by the object parsers, which reject any key they do not know.
    /// - Throws: an error with `code` naming `object` when this is not a map, a key is not text or
    ///   a key is not in `allowed`. The message names the unknown key only by kind and position.
    package func checkTextKeys(_ allowed: [String], code: AttestKitError.Code, object: String) throws(AttestKitError) {
        guard let entries = mapValue else {
            throw AttestKitError(code, "\(object) is a \(kindName), not a map")
        }
        for (position, entry) in entries.enumerated() {
            guard let key = entry.key.textValue else {
                throw AttestKitError(code, "\(object) has a \(entry.key.kindName) key at position \(position)")
            }
            guard allowed.contains(where: { Self.sameUTF8($0, key) }) else {
                throw AttestKitError(code, "\(object) has an unknown key at position \(position)")
            }
        }
    }

    /// A short name of the item's kind, for error messages (never its contents).
    package var kindName: String {
        switch self {
        case .unsigned: "unsigned integer"
        case .negative: "negative integer"
        case .bytes: "byte string"
        case .text: "text string"
        case .array: "array"
        case .map: "map"
        case .tagged: "tagged item"
        case .simple(let info, _): info >= 25 ? "float" : "simple value"
        }
    }
}
