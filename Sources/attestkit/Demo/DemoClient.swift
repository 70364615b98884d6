import AsyncHTTPClient
import AttestKitWire
import Foundation
import NIOCore
import NIOHTTP1

/// The demo's HTTP client of the AttestKit server: real requests over loopback, JSON in and out, a deadline per
/// call, bounded answers. The admin token goes only into the `Authorization` header of admin calls, the backend
/// token only into that of backend calls (assertion checks, DeviceCheck).
struct DemoClient: Sendable {
    /// The HTTP client (the command's, shut down by it).
    let http: HTTPClient
    /// `http://127.0.0.1:PORT`.
    let baseURL: String
    /// The admin bearer token.
    let adminToken: String
    /// The backend bearer token.
    let backendToken: String

    /// How long one call may take.
    static let deadline = TimeAmount.seconds(10)
    /// The largest answer read.
    static let maximumAnswer = 1 << 20

    /// POSTs `body` as JSON to an app route.
    func post(_ path: String, _ body: some Encodable) async throws -> DemoResponse {
        try await send(postRequest(path, body))
    }

    /// POSTs `body` as JSON to a backend route, with the backend token.
    func backendPost(_ path: String, _ body: some Encodable) async throws -> DemoResponse {
        var request = try postRequest(path, body)
        request.headers.add(name: "Authorization", value: "Bearer \(backendToken)")
        return try await send(request)
    }

    private func postRequest(_ path: String, _ body: some Encodable) throws -> HTTPClientRequest {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try WireJSON.encode(body)))
        return request
    }

    /// GETs an admin `path` with the admin token.
    func adminGet(_ path: String) async throws -> DemoResponse {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .GET
        request.headers.add(name: "Authorization", value: "Bearer \(adminToken)")
        return try await send(request)
    }

    private func send(_ request: HTTPClientRequest) async throws -> DemoResponse {
        let response = try await http.execute(request, deadline: .now() + Self.deadline)
        let body = try await response.body.collect(upTo: Self.maximumAnswer)
        return DemoResponse(status: Int(response.status.code), body: Array(body.readableBytesView))
    }
}

/// One answer of the server: its status and JSON body.
struct DemoResponse: Sendable {
    /// The HTTP status.
    let status: Int
    /// The body bytes.
    let body: [UInt8]

    /// The body as `T`, or `nil` when it is not one.
    func decode<T: Decodable>(_ type: T.Type) -> T? {
        try? WireJSON.decode(T.self, from: Data(body))
    }

    /// The error code of an error answer.
    var errorCode: String? { decode(ErrorResponse.self)?.error.code }

    /// `201`, or `409 counter_not_increasing` for an error answer: how the report shows an outcome.
    var summary: String { errorCode.map { "\(status) \($0)" } ?? "\(status)" }
}
