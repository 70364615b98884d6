import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Minimal JSON POSTs for `attestkit load`.
struct LoadHTTP: Sendable {
    let client: HTTPClient
    let base: String
    /// The backend token, sent to the backend route `/v1/assertions/verify` only.
    let backendToken: String

    struct Answer {
        let status: UInt
        let body: [String: Any]

        /// A string field of the body, or of its `error` object.
        func field(_ name: String) -> String? {
            if let value = body[name] as? String { return value }
            return (body["error"] as? [String: Any])?[name] as? String
        }
    }

    func post(_ path: String, json: String) async throws -> Answer {
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if path.hasPrefix("/v1/assertions/") {
            request.headers.add(name: "Authorization", value: "Bearer \(backendToken)")
        }
        request.body = .bytes(ByteBuffer(string: json))
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        // A verified assertion's answer is not read: the load generator shares the machine with the server.
        if path == "/v1/assertions/verify", response.status == .ok {
            return Answer(status: response.status.code, body: [:])
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any]
        return Answer(status: response.status.code, body: object ?? [:])
    }
}
