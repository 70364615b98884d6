import AsyncHTTPClient
import AttestKitWire
import Foundation
import NIOCore
import NIOHTTP1

/// Minimal JSON POSTs of the API's messages (``AttestKitWire``) for `attestkit load`.
struct LoadHTTP: Sendable {
    let client: HTTPClient
    let base: String
    /// The backend token, sent to the backend route `/v1/assertions/verify` only.
    let backendToken: String
    /// Where the backend route is sent: the backend listener's URL (`http.backend-port`), or `base`.
    var backendBase: String? = nil

    /// One answer: its status and body.
    struct Answer {
        let status: UInt
        let body: [UInt8]

        /// The body as `Message`, or `nil` when it is not one.
        func decode<Message: Decodable>(_ type: Message.Type) -> Message? {
            try? WireJSON.decode(type, from: Data(body))
        }

        /// The code of an error answer, or an empty string.
        var errorCode: String { decode(ErrorResponse.self)?.error.code ?? "" }
    }

    /// POSTs `message` as JSON.
    func post(_ path: String, _ message: some Encodable) async throws -> Answer {
        try await post(path, body: try WireJSON.encode(message))
    }

    /// POSTs JSON already encoded (so that a load run measures the server, not the encoder).
    func post(_ path: String, body: Data) async throws -> Answer {
        let backend = path.hasPrefix("/v1/assertions/")
        var request = HTTPClientRequest(url: (backend ? backendBase ?? base : base) + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        if backend { request.headers.add(name: "Authorization", value: "Bearer \(backendToken)") }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 1 << 20)
        return Answer(status: response.status.code, body: Array(bytes.readableBytesView))
    }
}
