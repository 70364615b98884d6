import AttestKitStore
import AttestKitWire
import Foundation

/// One AttestKit integration, driven the same way by the shared suite: the challenge and attestation routes under
/// `/v1`; `/orders` (POST and GET) and every path under it (GET) guarded as the group `orders`
/// (``EdgeConfiguration``), answering with the verified key's id and the decision in ``EdgeHeaders``.
protocol EdgeDriver: Sendable {
    /// The store the edge's flows share.
    var store: any AttestationStore { get }
    /// The mock Apple validating DeviceCheck tokens, when the configuration asks for DeviceCheck.
    var apple: EdgeApple? { get }

    /// Sends one request to the application, exactly as given (the target is the request line's).
    func send(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) async throws -> EdgeAnswer
}

/// An answer of the application.
struct EdgeAnswer: Sendable, CustomStringConvertible {
    /// The HTTP status.
    let status: Int
    /// The header fields, as answered.
    var headers: [(String, String)] = []
    /// The body.
    let body: [UInt8]

    /// The body as `Message`, `nil` when it is not one.
    func decode<Message: Decodable>(_ type: Message.Type) -> Message? {
        try? WireJSON.decode(type, from: Data(body))
    }

    /// The first value of the header `name` (case-insensitive).
    func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body as text.
    var text: String { String(decoding: body, as: UTF8.self) }

    /// `trust|enforced|stepUp|refusal`: the decision of an answer of a guarded route (``EdgeHeaders``).
    var decision: String {
        [EdgeHeaders.trust, EdgeHeaders.enforced, EdgeHeaders.stepUp, EdgeHeaders.refusal]
            .map { header($0) ?? "?" }.joined(separator: "|")
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
