import Foundation

/// base64url without padding (RFC 7515 §2), strict: the encoding of JWTs, JWKs and the app key line of
/// ``KeyAttestationClientData``.
public enum Base64URL {
    /// Encodes without padding.
    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes base64url without padding; `nil` for any other character, padding, an impossible length, or a
    /// non-canonical form (unused bits set in the last character), so that one value has exactly one text.
    public static func decode(_ text: Substring) -> [UInt8]? {
        var standard = String()
        standard.reserveCapacity(text.utf8.count + 3)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                standard.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: "-"): standard.append("+")
            case UInt8(ascii: "_"): standard.append("/")
            default: return nil
            }
        }
        switch standard.utf8.count % 4 {
        case 1: return nil
        case 2: standard += "=="
        case 3: standard += "="
        default: break
        }
        guard let data = Data(base64Encoded: standard) else { return nil }
        let bytes = Array(data)
        guard encode(bytes).utf8.elementsEqual(text.utf8) else { return nil }
        return bytes
    }
}
