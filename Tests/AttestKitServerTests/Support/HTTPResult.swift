import Foundation
import NIOHTTP1

/// One answer of the server under test: status, headers, body, and the API's error envelope when there is one.
struct HTTPResult: Sendable, CustomStringConvertible {
    let status: Int
    let headers: HTTPHeaders
    let body: [UInt8]

    /// The body as UTF-8 text.
    var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object, or `nil`.
    var object: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])) as? [String: Any]
    }

    /// `error.code` of `{"error": {"code": ..., "message": ...}}`, or `nil` when the body is no error envelope.
    var errorCode: String? { ((object?["error"] as? [String: Any])?["code"]) as? String }

    /// `error.message`, or `nil`.
    var errorMessage: String? { ((object?["error"] as? [String: Any])?["message"]) as? String }

    /// The first value of header `name`.
    func header(_ name: String) -> String? { headers.first(name: name) }

    /// The string at `key` (a dotted path into nested objects), or `nil`.
    func string(_ key: String) -> String? { value(key) as? String }

    /// The integer at `key`, or `nil`.
    func int(_ key: String) -> Int? { value(key) as? Int }

    /// The Boolean at `key`, or `nil`.
    func bool(_ key: String) -> Bool? { value(key) as? Bool }

    /// Whether the object has a member `key` (a dotted path), null included.
    func has(_ key: String) -> Bool { value(key) != nil }

    /// The array of objects at `key`, or `nil`.
    func objects(_ key: String) -> [[String: Any]]? { value(key) as? [[String: Any]] }

    /// The value at a dotted path.
    func value(_ key: String) -> Any? {
        var current: Any? = object
        for part in key.split(separator: ".") {
            current = (current as? [String: Any])?[String(part)]
        }
        return current
    }

    /// `status code` and the start of the body, for failure messages.
    var description: String { "\(status) \(text.prefix(400))" }
}
