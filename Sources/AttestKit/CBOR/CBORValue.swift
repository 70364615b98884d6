/// One decoded CBOR data item, restricted to what App Attest uses (RFC 8949 major types 0 to 5).
///
/// ``CBORReader`` produces these values; it never produces tags, floats, simple values or
/// indefinite-length items. Byte strings are slices of the reader's input, so decoding does not
/// copy their contents: keep the input alive only as long as the values (slices share its storage).
package indirect enum CBORValue: Sendable, Hashable {
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
        self[.text(key)]
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
    package func checkTextKeys(_ allowed: Set<String>, code: AttestKitError.Code, object: String) throws(AttestKitError)
    {
        guard let entries = mapValue else {
            throw AttestKitError(code, "\(object) is a \(kindName), not a map")
        }
        for (position, entry) in entries.enumerated() {
            guard let key = entry.key.textValue else {
                throw AttestKitError(code, "\(object) has a \(entry.key.kindName) key at position \(position)")
            }
            guard allowed.contains(key) else {
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
        }
    }
}
