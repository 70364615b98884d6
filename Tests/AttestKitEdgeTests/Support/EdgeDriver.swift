import AttestKitStore
import AttestKitWire
import Foundation

/// One web framework's AttestKit integration, driven the same way by the shared suite: the challenge and
/// attestation routes under `/v1`; `/orders` (POST and GET) and every path under it (GET) guarded by the
/// framework's `AttestKitMiddleware`, answering with the verified key's id.
protocol EdgeDriver: Sendable {
    /// The store the edge's flows share.
    var store: any AttestationStore { get }

    /// Sends one request to the application, exactly as given (the target is the request line's).
    func send(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) async throws -> EdgeAnswer
}

/// An answer of the application.
struct EdgeAnswer: Sendable, CustomStringConvertible {
    /// The HTTP status.
    let status: Int
    /// The body.
    let body: [UInt8]

    /// The body as `Message`, `nil` when it is not one.
    func decode<Message: Decodable>(_ type: Message.Type) -> Message? {
        try? WireJSON.decode(type, from: Data(body))
    }

    /// The code of an error envelope.
    var code: String? { decode(ErrorResponse.self)?.error.code }

    /// `status body`.
    var description: String { "\(status) \(String(decoding: body, as: UTF8.self))" }
}

extension EdgeDriver {
    /// POSTs `message` as JSON.
    func post(_ target: String, _ message: some Encodable) async throws -> EdgeAnswer {
        try await send(
            "POST", target, headers: [("Content-Type", "application/json")], body: Array(try WireJSON.encode(message)))
    }
}
