import Foundation

/// JSON built by hand, so that tests can send exactly what they mean: fields in order, raw number text
/// (`1e400`, twenty-digit integers), wrong types, nulls, and fragments that are not JSON at all (``raw(_:)``).
indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// A number as written, unchecked.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([Member])
    /// Text sent as it is: broken JSON on purpose.
    case raw(String)

    /// One member of an object.
    struct Member: Sendable, Equatable {
        var key: String
        var value: JSONValue
    }

    /// The JSON text.
    var text: String {
        switch self {
        case .null: "null"
        case .bool(let value): value ? "true" : "false"
        case .number(let text), .raw(let text): text
        case .string(let value): Self.quoted(value)
        case .array(let values): "[" + values.map(\.text).joined(separator: ",") + "]"
        case .object(let members):
            "{" + members.map { Self.quoted($0.key) + ":" + $0.value.text }.joined(separator: ",") + "}"
        }
    }

    /// The UTF-8 bytes of ``text``.
    var bytes: [UInt8] { Array(text.utf8) }

    /// This object with `key` set to `value` (replaced in place, or appended), or removed when `value` is `nil`.
    /// `key` may be a dotted path into nested objects (`request.timestamp`).
    func setting(_ key: String, _ value: JSONValue?) -> JSONValue {
        guard case .object(var members) = self else { return self }
        let parts = key.split(separator: ".", maxSplits: 1).map(String.init)
        let head = parts[0]
        let index = members.firstIndex { $0.key == head }
        let newValue: JSONValue?
        if parts.count == 2 {
            let inner = index.map { members[$0].value } ?? .object([])
            newValue = inner.setting(parts[1], value)
        } else {
            newValue = value
        }
        switch (index, newValue) {
        case (let index?, let newValue?): members[index].value = newValue
        case (let index?, nil): members.remove(at: index)
        case (nil, let newValue?): members.append(Member(key: head, value: newValue))
        case (nil, nil): break
        }
        return .object(members)
    }

    /// A JSON string literal.
    static func quoted(_ value: String) -> String {
        var out = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Standard padded Base64 of `bytes`, as a JSON string.
    static func base64(_ bytes: some Sequence<UInt8>) -> JSONValue { .string(Data(bytes).base64EncodedString()) }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByNilLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    init(stringLiteral value: String) { self = .string(value) }
    init(booleanLiteral value: Bool) { self = .bool(value) }
    init(integerLiteral value: Int64) { self = .number(String(value)) }
    init(nilLiteral: ()) { self = .null }
    init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(elements.map { Member(key: $0.0, value: $0.1) })
    }

    /// A JSON number.
    static func int(_ value: some BinaryInteger) -> JSONValue { .number(String(value)) }
}
