package import AttestKitWire
import Foundation

/// Reads the JSON body of a request strictly, once for every edge: UTF-8 JSON of the expected types, a failure a
/// 400 `invalid_json` that names the field. Each edge collects the body (bounded by the configured limit) and hands
/// the bytes here.
package enum JSONBody {
    /// The largest body of `POST /v1/requests/verify`, which carries a request body of up to `bodyLimit` bytes in
    /// Base64 (4 bytes for every 3) and the request's headers (16 KiB more).
    package static func decisionLimit(_ bodyLimit: Int) -> Int { (bodyLimit + 2) / 3 * 4 + 16_384 }

    /// Decodes `T` from `bytes`; an empty body decodes from `{}` when `emptyAsObject`.
    package static func decode<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], emptyAsObject: Bool = false
    ) throws(FlowError) -> T {
        if bytes.isEmpty && emptyAsObject { return try decode(type, from: Array("{}".utf8)) }
        guard !bytes.isEmpty else { throw FlowError.invalidJSON("the body is empty; a JSON object is expected") }
        do {
            return try WireJSON.decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw FlowError.invalidJSON(describe(error))
        } catch {
            throw FlowError.invalidJSON("the body is not JSON")
        }
    }

    /// Decodes `T` from `bytes` as ``decode(_:from:emptyAsObject:)`` does, and strictly: the body is one JSON object
    /// whose members are all among `members`, none `null` and none given twice (at any depth). For a request whose
    /// members each change a decision (the decision route's): a misspelt `group` or `bodySha256` would otherwise be
    /// ignored (the default group decides, the body goes unchecked), a `null` taken for an absent member, and a
    /// member given twice read by a proxy or validator in front as the other of its two values.
    package static func decodeStrictly<T: Decodable>(
        _ type: T.Type, from bytes: [UInt8], members: Set<String>
    ) throws(FlowError) -> T {
        guard !bytes.isEmpty else { throw FlowError.invalidJSON("the body is empty; a JSON object is expected") }
        let data = Data(bytes)
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw FlowError.invalidJSON("the body is not a JSON object")
        }
        for name in object.keys.sorted() {
            guard members.contains(name) else {
                throw FlowError.invalidJSON(
                    "\(shown(name)): is not a member of this request (\(members.sorted().joined(separator: ", ")))")
            }
            if object[name] is NSNull { throw FlowError.invalidJSON("\(name): must not be null; leave it out") }
        }
        if let duplicate = JSONDuplicateKeys.first(in: data) {
            throw FlowError.invalidJSON("\(shown(duplicate)): is given twice")
        }
        return try decode(type, from: bytes)
    }

    /// A name the request chose, as an error message shows it: printable ASCII (anything else `?`), at most 64
    /// characters.
    private static func shown(_ name: String) -> String {
        let scalars = name.unicodeScalars.prefix(64).map { (0x20...0x7E).contains($0.value) ? Character($0) : "?" }
        return String(scalars) + (name.unicodeScalars.count > 64 ? "…" : "")
    }

    /// Decodes an assertion request: ``AssertionRequestReader`` for the usual shape, `JSONDecoder` for any other
    /// body (which it then accepts or refuses as for every other route).
    package static func decode(_ type: AssertionRequest.Type, from bytes: [UInt8]) throws(FlowError) -> AssertionRequest
    {
        if let request = AssertionRequestReader.read(bytes) { return request }
        return try decode(type, from: bytes, emptyAsObject: false)
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            // A member's name may be the client's own (a header's name in the decision route's `headers`): shown
            // as printable ASCII, at most 64 characters, as every other name the client chose.
            let text = codingPath.map { $0.intValue.map { "[\($0)]" } ?? shown($0.stringValue) }.joined(separator: ".")
            return text.isEmpty ? "the body" : text
        }
        switch error {
        case .typeMismatch(_, let context): return "\(path(context.codingPath)): wrong type"
        case .valueNotFound(_, let context): return "\(path(context.codingPath)): must not be null"
        case .keyNotFound(let key, let context): return "\(path(context.codingPath + [key])): is required"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "the body is not valid JSON" : "\(path(context.codingPath)): invalid"
        @unknown default: return "the body is not valid JSON"
        }
    }
}

extension FlowError {
    /// 400 `invalid_json`: the body is not the JSON the route takes (`message` names the field).
    public static func invalidJSON(_ message: String) -> FlowError {
        FlowError(.init("invalid_json"), .malformed, message)
    }
}
