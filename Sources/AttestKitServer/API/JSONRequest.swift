import AttestKitWire
import Foundation
import Hummingbird
import NIOCore

/// Reads a JSON request body strictly: bounded by the configured limit, UTF-8 JSON, the expected types.
enum JSONRequest {
    /// The largest body of `POST /v1/requests/verify`, which carries a request body of up to `bodyLimit` bytes in
    /// Base64 (4 bytes for every 3) and the request's headers (16 KiB more).
    static func decisionLimit(_ bodyLimit: Int) -> Int { (bodyLimit + 2) / 3 * 4 + 16_384 }

    /// Collects at most `limit` bytes of the body.
    static func body(of request: inout Request, limit: Int) async throws -> [UInt8] {
        let buffer = try await request.collectBody(upTo: limit)
        return Array(buffer.readableBytesView)
    }

    /// Decodes `T` from the body; an empty body decodes from `{}` when `emptyAsObject`.
    static func decode<T: Decodable>(
        _ type: T.Type, from request: inout Request, limit: Int, emptyAsObject: Bool = false
    ) async throws -> T {
        var bytes = try await body(of: &request, limit: limit)
        if bytes.isEmpty && emptyAsObject { bytes = Array("{}".utf8) }
        return try decode(type, from: bytes)
    }

    /// Decodes an assertion request: ``AssertionRequestReader`` for the usual shape, `JSONDecoder` for any other
    /// body (which it then accepts or refuses as for every other route).
    static func decode(
        _ type: AssertionRequest.Type, from request: inout Request, limit: Int
    ) async throws -> AssertionRequest {
        let bytes = try await body(of: &request, limit: limit)
        return try AssertionRequestReader.read(bytes) ?? decode(type, from: bytes)
    }

    /// Decodes `T` from JSON bytes, turning every decoding failure into a 400 that names the field.
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        guard !bytes.isEmpty else { throw APIError.invalidJSON("the body is empty; a JSON object is expected") }
        do {
            return try WireJSON.decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw APIError.invalidJSON(describe(error))
        } catch {
            throw APIError.invalidJSON("the body is not JSON")
        }
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ codingPath: [any CodingKey]) -> String {
            let text = codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
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
