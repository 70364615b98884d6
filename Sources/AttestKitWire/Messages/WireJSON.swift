public import Foundation

/// The JSON of the API, written one way by every edge: keys sorted, slashes not escaped, so the service, the
/// Vapor routes and the tests write the same bytes for the same message.
public enum WireJSON {
    /// Encodes `message`.
    /// - Throws: `EncodingError` (a non-finite number; no message of this module has one).
    public static func encode(_ message: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(message)
    }

    /// Decodes a `Message` from `data`.
    /// - Throws: `DecodingError` when `data` is not that message.
    public static func decode<Message: Decodable>(_ type: Message.Type, from data: Data) throws -> Message {
        try JSONDecoder().decode(type, from: data)
    }
}
