import AttestKitFlows
import AttestKitWire
import Hummingbird
import NIOCore

/// Collects a JSON request body, bounded by the configured limit, and decodes it with the flows' strict reader
/// (`JSONBody`, shared with the Vapor edge).
enum JSONRequest {
    /// The largest body of `POST /v1/requests/verify` (`JSONBody.decisionLimit(_:)`).
    static func decisionLimit(_ bodyLimit: Int) -> Int { JSONBody.decisionLimit(bodyLimit) }

    /// Collects at most `limit` bytes of the body.
    static func body(of request: inout Request, limit: Int) async throws -> [UInt8] {
        let buffer = try await request.collectBody(upTo: limit)
        return Array(buffer.readableBytesView)
    }

    /// Decodes `T` from the body; an empty body decodes from `{}` when `emptyAsObject`.
    static func decode<T: Decodable>(
        _ type: T.Type, from request: inout Request, limit: Int, emptyAsObject: Bool = false
    ) async throws -> T {
        try JSONBody.decode(type, from: try await body(of: &request, limit: limit), emptyAsObject: emptyAsObject)
    }

    /// Decodes an assertion request (the fast reader for the usual shape, `JSONDecoder` for any other body).
    static func decode(
        _ type: AssertionRequest.Type, from request: inout Request, limit: Int
    ) async throws -> AssertionRequest {
        try JSONBody.decode(type, from: try await body(of: &request, limit: limit))
    }
}
