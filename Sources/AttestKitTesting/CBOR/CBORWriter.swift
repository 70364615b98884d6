/// A minimal writer of canonical CBOR (RFC 8949 §4.2.1 shortest heads) for the objects a device returns:
/// maps with text or integer keys, byte strings, text strings, arrays and integers.
///
/// Entries are written in the order they are given, which is how the software Apple reproduces Apple's key
/// order (`fmt`, `attStmt`, `authData`; COSE `1, 3, -1, -2, -3`) byte for byte.
struct CBORWriter {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []

    /// An unsigned integer (major type 0).
    mutating func unsigned(_ value: UInt64) { head(0, value) }

    /// A signed integer: major type 0 for non-negative values, 1 for negative ones.
    mutating func integer(_ value: Int64) {
        if value >= 0 {
            head(0, UInt64(value))
        } else {
            head(1, UInt64(-(value + 1)))
        }
    }

    /// A byte string (major type 2).
    mutating func byteString(_ value: some Collection<UInt8>) {
        head(2, UInt64(value.count))
        bytes.append(contentsOf: value)
    }

    /// A UTF-8 text string (major type 3).
    mutating func text(_ value: String) {
        head(3, UInt64(value.utf8.count))
        bytes.append(contentsOf: value.utf8)
    }

    /// The head of an array of `count` elements (major type 4); the elements follow.
    mutating func arrayHeader(count: Int) { head(4, UInt64(count)) }

    /// The head of a map of `count` entries (major type 5); keys and values follow, alternating.
    mutating func mapHeader(count: Int) { head(5, UInt64(count)) }

    /// Writes `major` with `argument` in its shortest form.
    private mutating func head(_ major: UInt8, _ argument: UInt64) {
        let type = major << 5
        switch argument {
        case 0..<24:
            bytes.append(type | UInt8(argument))
        case 24...0xFF:
            bytes += [type | 24, UInt8(argument)]
        case 0x100...0xFFFF:
            bytes.append(type | 25)
            appendBigEndian(argument, width: 2)
        case 0x1_0000...0xFFFF_FFFF:
            bytes.append(type | 26)
            appendBigEndian(argument, width: 4)
        default:
            bytes.append(type | 27)
            appendBigEndian(argument, width: 8)
        }
    }

    private mutating func appendBigEndian(_ value: UInt64, width: Int) {
        for index in (0..<width).reversed() { bytes.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index)))) }
    }
}
