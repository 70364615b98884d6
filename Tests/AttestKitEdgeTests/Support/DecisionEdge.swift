import AttestKitServer
import AttestKitStore
import AttestKitWire
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore

/// The decision route as a backend in another language uses it: the app calls the service's own routes (`/v1/...`)
/// directly, and the backend's `/orders` routes ask `POST /v1/requests/verify` of an ``AttestKitServer`` (its
/// router, driven without a socket) about each request they receive, then answer as a middleware would.
///
/// For each request to `/orders`, the backend sends the method, the target as received, the body (Base64), the
/// request's `X-AttestKit-*` headers (a header received twice is sent under a second spelling of its name, which the
/// route refuses as repeated), the rollout subject and the client it names (``EdgeHeaders``), for the group
/// `orders`, with its backend token. Allowed: 200 with the verified key's id and the decision in ``EdgeHeaders``.
/// Refused: the decision's status, `Retry-After` and error envelope. Any other answer of the route is no decision:
/// the request is refused (fail closed), with the route's 400 or 413 (the request cannot be decided about), else 503.
struct DecisionEdge: EdgeDriver {
    let store: any AttestationStore
    let apple: EdgeApple?
    let client: any TestClientProtocol

    static func run(
        store: any AttestationStore, configuration: EdgeConfiguration, apple: EdgeApple?,
        _ body: @Sendable (any EdgeDriver) async throws -> Void
    ) async throws {
        let server = try HummingbirdEdge.server(store: store, configuration: configuration, apple: apple)
        try await Application(router: server.buildRouter(), logger: HummingbirdEdge.silent).test(.router) { client in
            try await body(DecisionEdge(store: store, apple: apple, client: client))
        }
    }

    func send(_ method: String, _ target: String, headers: [(String, String)], body: [UInt8]) async throws -> EdgeAnswer
    {
        guard target == "/orders" || target.hasPrefix("/orders/") || target.hasPrefix("/orders?") else {
            return try await service(method, target, headers: headers, body: body)
        }
        let request = Self.decisionRequest(method, target, headers: headers, body: body)
        let answer = try await service(
            "POST", "/v1/requests/verify",
            headers: [
                ("Authorization", "Bearer \(EdgeConfiguration.backendToken)"), ("Content-Type", "application/json"),
            ],
            body: Array(try WireJSON.encode(request)))
        guard answer.status == 200, let decision = answer.decode(RequestVerificationResponse.self) else {
            // No decision: refused, never let through.
            let status = [400, 413].contains(answer.status) ? answer.status : 503
            return EdgeAnswer(status: status, headers: [], body: answer.body)
        }
        guard decision.allowed else {
            let error = decision.error ?? ErrorResponse.Detail(code: "refused", message: "refused")
            return EdgeAnswer(
                status: decision.status ?? 403, headers: decision.retryAfter.map { [("Retry-After", "\($0)")] } ?? [],
                body: Array(try WireJSON.encode(ErrorResponse(code: error.code, message: error.message))))
        }
        return EdgeAnswer(
            status: 200,
            headers: EdgeHeaders.decision(
                trust: decision.trust, enforced: decision.enforced, stepUp: decision.stepUp,
                refusal: decision.error?.code, categoryChanged: decision.validationCategoryChanged ?? false),
            body: Array((decision.keyId ?? "no key").utf8))
    }

    /// What the backend sends about a request it received.
    static func decisionRequest(
        _ method: String, _ target: String, headers: [(String, String)], body: [UInt8]
    ) -> RequestVerificationRequest {
        var attestKit: [String: String] = [:]
        for (name, value) in headers where name.lowercased().hasPrefix("x-attestkit-") {
            // A name received again goes under a spelling not used yet, so that the route sees it twice.
            let spellings = [name, name.lowercased(), name.uppercased()]
            guard let spelling = spellings.first(where: { attestKit[$0] == nil }) else { continue }
            attestKit[spelling] = value
        }
        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
        return RequestVerificationRequest(
            group: EdgeConfiguration.group, method: method, target: target,
            body: body.isEmpty ? nil : Data(body).base64EncodedString(), headers: attestKit,
            subject: header(EdgeHeaders.subject), client: header(EdgeHeaders.client))
    }

    /// Sends one request to the service as given.
    private func service(
        _ method: String, _ target: String, headers: [(String, String)], body: [UInt8]
    ) async throws -> EdgeAnswer {
        var fields = HTTPFields()
        for (name, value) in headers {
            guard let name = HTTPField.Name(name) else { continue }
            fields.append(HTTPField(name: name, value: value))
        }
        let response = try await client.executeRequest(
            uri: target, method: HTTPRequest.Method(method) ?? .get, headers: fields,
            body: body.isEmpty ? nil : ByteBuffer(bytes: body))
        return EdgeAnswer(
            status: Int(response.status.code), headers: response.headers.map { ($0.name.rawName, $0.value) },
            body: Array(response.body.readableBytesView))
    }
}
