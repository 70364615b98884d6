import Foundation

/// Lenient-in-alphabet, strict-in-content Base64 decoding for identifiers and objects that arrive
/// as standard Base64 or base64url, padded or not.
package enum Base64 {
    /// Decodes standard Base64 or base64url, with or without padding, ignoring no other characters.
    /// Returns `nil` for any character outside both alphabets, a misplaced `=`, or an impossible length.
    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var normalized = String()
        normalized.reserveCapacity(text.utf8.count + 3)
        var padding = 0
        for scalar in text.unicodeScalars {
            switch scalar {
            case "-": guard padding == 0 else { return nil }; normalized.unicodeScalars.append("+")
            case "_": guard padding == 0 else { return nil }; normalized.unicodeScalars.append("/")
            case "=": padding += 1; normalized.unicodeScalars.append(scalar)
            case "A"..."Z", "a"..."z", "0"..."9", "+", "/":
                guard padding == 0 else { return nil }
                normalized.unicodeScalars.append(scalar)
            default: return nil
            }
        }
        guard padding <= 2 else { return nil }
        let unpadded = normalized.utf8.count - padding
        guard unpadded % 4 != 1 else { return nil }
        if padding > 0 { guard normalized.utf8.count % 4 == 0 else { return nil } }
        let remainder = normalized.utf8.count % 4
        if remainder != 0 { normalized += String(repeating: "=", count: 4 - remainder) }
        guard let data = Data(base64Encoded: normalized) else { return nil }
        return Array(data)
    }

    /// Standard, padded Base64.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
    }
}
