package import AttestKitWire

/// Reads the usual body of `POST /v1/assertions/verify` without Foundation's `JSONDecoder`, which costs more than
/// the rest of the request's JSON handling together on the service's hottest route.
///
/// It reads one shape only, strictly: a JSON object of ``AssertionRequest``'s keys, each at most once, whose values
/// are strings of printable ASCII without escapes (the Base64, identifiers and paths the clients send), `request`
/// an object of ``AssertionRequest/Parts``' keys with `timestamp` an integer (digits, an optional minus, no leading
/// zero, within `Int64`), and whitespace between tokens. Anything else (an escape, a byte outside printable ASCII,
/// `null`, another key, a duplicate, a number in another form, a missing required key, bytes after the object)
/// makes it give up and return `nil`, and the body goes to `JSONDecoder`, which then accepts or refuses it as
/// always. So a body this reads is one `JSONDecoder` would read the same way, a test checks it on every truncation
/// and many mutations of real bodies, and the service's answers, errors included, stay those of `JSONDecoder`.
package enum AssertionRequestReader {
    /// The request in `bytes`, or `nil` when they are not of the shape this reads.
    package static func read(_ bytes: [UInt8]) -> AssertionRequest? {
        var reader = Cursor(bytes: bytes)
        guard let fields = reader.object(allowing: topKeys, nested: "request") else { return nil }
        reader.skipWhitespace()
        guard reader.atEnd, case .string(let keyID)? = fields["keyId"],
            case .string(let assertion)? = fields["assertion"]
        else { return nil }
        var request = AssertionRequest(keyId: keyID, assertion: assertion)
        for (key, value) in fields {
            switch (key, value) {
            case ("keyId", _), ("assertion", _): break
            case ("clientData", .string(let text)): request.clientData = text
            case ("challengeId", .string(let text)): request.challengeId = text
            case ("request", .object(let parts)):
                guard let parts = Self.parts(parts) else { return nil }
                request.request = parts
            default: return nil
            }
        }
        return request
    }

    private static let topKeys: Set<String> = ["keyId", "assertion", "clientData", "request", "challengeId"]
    private static let partKeys: Set<String> = ["method", "target", "body", "bodySha256", "timestamp"]

    private static func parts(_ fields: [String: Value]) -> AssertionRequest.Parts? {
        guard case .string(let method)? = fields["method"], case .string(let target)? = fields["target"] else {
            return nil
        }
        var parts = AssertionRequest.Parts(method: method, target: target)
        for (key, value) in fields {
            switch (key, value) {
            case ("method", _), ("target", _): break
            case ("body", .string(let text)): parts.body = text
            case ("bodySha256", .string(let text)): parts.bodySha256 = text
            case ("timestamp", .integer(let milliseconds)): parts.timestamp = milliseconds
            default: return nil
            }
        }
        return parts
    }

    /// A value of the shape read: a plain string, an integer, or (for the one nested key) an object.
    private enum Value {
        case string(String)
        case integer(Int64)
        case object([String: Value])
    }

    /// The position in the body.
    private struct Cursor {
        let bytes: [UInt8]
        var index = 0

        var atEnd: Bool { index == bytes.count }

        mutating func skipWhitespace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        /// Reads `byte` after optional whitespace.
        mutating func expect(_ byte: UInt8) -> Bool {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// An object of the `allowing` keys, each once; the key `nested` (if any) holds an object of part keys.
        mutating func object(allowing keys: Set<String>, nested: String?) -> [String: Value]? {
            guard expect(UInt8(ascii: "{")) else { return nil }
            var fields: [String: Value] = [:]
            repeat {
                guard let key = string(), keys.contains(key), fields[key] == nil, expect(UInt8(ascii: ":")) else {
                    return nil
                }
                skipWhitespace()
                guard index < bytes.count else { return nil }
                if key == nested {
                    guard let inner = object(allowing: AssertionRequestReader.partKeys, nested: nil) else { return nil }
                    fields[key] = .object(inner)
                } else if bytes[index] == UInt8(ascii: "\"") {
                    guard let text = string() else { return nil }
                    fields[key] = .string(text)
                } else {
                    guard let number = integer() else { return nil }
                    fields[key] = .integer(number)
                }
            } while expect(UInt8(ascii: ","))
            return expect(UInt8(ascii: "}")) ? fields : nil
        }

        /// A string of printable ASCII without escapes.
        mutating func string() -> String? {
            guard expect(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return String(decoding: bytes[start..<index - 1], as: UTF8.self)
                }
                guard byte >= 0x20, byte < 0x7F, byte != UInt8(ascii: "\\") else { return nil }
                index += 1
            }
            return nil
        }

        /// An integer: an optional minus, then `0` or digits without a leading zero, within `Int64`, followed by
        /// neither a fraction nor an exponent.
        mutating func integer() -> Int64? {
            let negative = bytes[index] == UInt8(ascii: "-")
            if negative { index += 1 }
            let start = index
            var magnitude: Int64 = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                let digit = Int64(bytes[index] - UInt8(ascii: "0"))
                let (times, overflowed) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflowedAgain) = times.addingReportingOverflow(digit)
                guard !overflowed, !overflowedAgain else { return nil }
                magnitude = sum
                index += 1
            }
            let digits = index - start
            guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
            if index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return nil
                default: break
                }
            }
            return negative ? -magnitude : magnitude
        }
    }
}
