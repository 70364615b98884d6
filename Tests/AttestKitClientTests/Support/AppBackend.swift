import AttestKitClient
import AttestKitTestSupport
import AttestKitWire
import Foundation
import Synchronization
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The app's own server, in the test process: an ``HTTPTransport`` that answers requests to
/// `https://app.example` by asking the real AttestKit service about their proof, as a backend does.
///
/// - With the assertion headers it calls `POST /v1/assertions/verify` with the request's parts (method, path and
///   query, body, and the timestamp or challenge id) and answers 200 `{"counter": N}` when the service accepts
///   the assertion, or the service's refusal as is.
/// - With `X-AttestKit-Device-Token` it calls `POST /v1/devicecheck/validate`.
/// - Without either it answers 401.
///
/// Requests to any other host (the service itself: challenges, attestations) go over URLSession.
final class AppBackend: HTTPTransport {
    static let host = "app.example"

    let service: URL
    private let network = URLSessionTransport()
    private let log = Mutex<[Outcome]>([])

    /// What the backend decided about one request.
    struct Outcome: Sendable {
        let status: Int
        let code: String?
        let counter: Int?
        let keyID: String?
    }

    init(service: URL) { self.service = service }

    /// Every request the backend answered, in order.
    var outcomes: [Outcome] { log.withLock { $0 } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard let url = request.url, url.host == Self.host else { return try await network.send(request) }
        let headers = request.allHTTPHeaderFields ?? [:]
        func header(_ name: String) -> String? {
            headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
        }
        let verify: URLRequest
        if let keyID = header(AttestKitHeaderNames.keyID), let assertion = header(AttestKitHeaderNames.assertion) {
            var target = url.path
            if let components = URLComponents(url: url, resolvingAgainstBaseURL: false) {
                target = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
            }
            var parts: [String: Any] = [
                "method": request.httpMethod ?? "GET", "target": target,
                "body": (request.httpBody ?? Data()).base64EncodedString(),
            ]
            var body: [String: Any] = ["keyId": keyID, "assertion": assertion]
            if let timestamp = header(AttestKitHeaderNames.timestamp).flatMap({ Int64($0) }) {
                parts["timestamp"] = Int(timestamp)
            }
            if let challenge = header(AttestKitHeaderNames.challenge) { body["challengeId"] = challenge }
            body["request"] = parts
            verify = try Self.post(service.appendingPathComponent("v1/assertions/verify"), body)
        } else if let token = header(AttestKitHeaderNames.deviceToken) {
            verify = try Self.post(service.appendingPathComponent("v1/devicecheck/validate"), ["deviceToken": token])
        } else {
            return try Self.answer(url, 401, ["error": ["code": "missing_credentials", "message": "no proof"]])
        }
        let (data, response) = try await network.send(verify)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        let code = (json["error"] as? [String: Any])?["code"] as? String
        let outcome = Outcome(
            status: response.statusCode, code: code, counter: json["counter"] as? Int,
            keyID: header(AttestKitHeaderNames.keyID))
        log.withLock { $0.append(outcome) }
        if response.statusCode == 200, json["valid"] as? Bool == false {
            return try Self.answer(url, 403, ["error": ["code": "device_token_invalid", "message": "invalid"]])
        }
        guard
            let http = HTTPURLResponse(
                url: url, statusCode: response.statusCode, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "application/json"])
        else { throw URLError(.badServerResponse) }
        return (data, http)
    }

    static func post(_ url: URL, _ body: [String: Any]) throws -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(ServeProcess.backendAuthorization, forHTTPHeaderField: "Authorization")
        request.httpBody = try JSONSerialization.data(withJSONObject: body)
        return request
    }

    static func answer(_ url: URL, _ status: Int, _ body: [String: Any]) throws -> (Data, HTTPURLResponse) {
        guard let http = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: nil)
        else { throw URLError(.badServerResponse) }
        return (try JSONSerialization.data(withJSONObject: body), http)
    }

    /// An order request of the app: `POST https://app.example/v1/orders?coupon=SPRING%2026` with a JSON body.
    static func order(_ sku: String = "A-42") -> URLRequest {
        guard let url = URL(string: "https://\(host)/v1/orders?coupon=SPRING%2026&n=1") else {
            fatalError("the order URL is valid")
        }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(#"{"sku":"\#(sku)"}"#.utf8)
        return request
    }
}
