import Foundation

/// Lenient-in-alphabet, strict-in-content Base64 decoding for identifiers and objects that arrive
/// as standard Base64 or base64url, padded or not.
package enum Base64 {
    /// Decodes standard Base64 or base64url, with or without padding, ignoring no other characters.
    /// Returns `nil` for any character outside both alphabets, a misplaced `=`, or an impossible length.
    /// Like Foundation's decoder, the unused low bits of the last character are not checked.
    ///
    /// One pass over the UTF-8 bytes with a table, without building a normalized copy: it runs on every request
    /// (key identifiers, assertions, bodies).
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(utf8: Array(text.utf8))
    }

    /// The value of each ASCII byte in either alphabet, or 0xFF.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8.enumerated() {
            table[Int(byte)] = UInt8(index)
        }
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        return table
    }()

    private static func decode(utf8 bytes: [UInt8]) -> [UInt8]? {
        var end = bytes.count
        while end > 0, bytes[end - 1] == UInt8(ascii: "=") { end -= 1 }
        let padding = bytes.count - end
        guard padding <= 2, end % 4 != 1 else { return nil }
        if padding > 0 { guard bytes.count % 4 == 0 else { return nil } }
        var output = [UInt8]()
        output.reserveCapacity(end / 4 * 3 + 2)
        let values = Self.values
        var accumulator: UInt32 = 0
        var held = 0
        for index in 0..<end {
            let value = values[Int(bytes[index])]
            // An `=` before the end, or any byte outside both alphabets.
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            held += 1
            if held == 4 {
                output.append(UInt8(truncatingIfNeeded: accumulator >> 16))
                output.append(UInt8(truncatingIfNeeded: accumulator >> 8))
                output.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator = 0
                held = 0
            }
        }
        switch held {
        case 2:
            output.append(UInt8(truncatingIfNeeded: accumulator >> 4))
        case 3:
            output.append(UInt8(truncatingIfNeeded: accumulator >> 10))
            output.append(UInt8(truncatingIfNeeded: accumulator >> 2))
        default:
            break
        }
        return output
    }

    /// Standard, padded Base64.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
    }
}
