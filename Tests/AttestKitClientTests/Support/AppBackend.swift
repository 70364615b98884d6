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
/// - `/v1/rewards` with `Authorization: Bearer <session token>` consumes the token (`POST /v1/tokens/consume`)
///   and answers the service's answer as is: the claims the first time, 409 `token_consumed` after.
/// - Without either it answers 401.
///
/// Requests to any other host (the service itself: challenges, attestations) go over URLSession.
final class AppBackend: HTTPTransport {
    static let host = "app.example"

    let service: URL
    private let network = URLSessionTransport()
    private let log = Mutex<[Outcome]>([])
    private let servicePaths = Mutex<[String]>([])

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

    /// How many requests the app sent to the service at `path` (`/v1/tokens`, ...).
    func serviceCalls(_ path: String) -> Int { servicePaths.withLock { $0.filter { $0 == path }.count } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard let url = request.url, url.host == Self.host else {
            servicePaths.withLock { $0.append(request.url?.path ?? "") }
            return try await network.send(request)
        }
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
            let timestamp = header(AttestKitHeaderNames.timestamp).flatMap { Int64($0) }
            let parts = AssertionRequest.Parts(
                method: request.httpMethod ?? "GET", target: target,
                body: (request.httpBody ?? Data()).base64EncodedString(), timestamp: timestamp)
            let body = AssertionRequest(
                keyId: keyID, assertion: assertion, request: parts,
                challengeId: header(AttestKitHeaderNames.challenge))
            verify = try Self.post(service.appendingPathComponent("v1/assertions/verify"), body)
        } else if url.path == "/v1/rewards", let bearer = header("Authorization"), bearer.hasPrefix("Bearer ") {
            verify = try Self.post(
                service.appendingPathComponent("v1/tokens/consume"),
                TokenConsumeRequest(token: String(bearer.dropFirst("Bearer ".count))))
        } else if let token = header(AttestKitHeaderNames.deviceToken) {
            verify = try Self.post(
                service.appendingPathComponent("v1/devicecheck/validate"), DeviceTokenRequest(deviceToken: token))
        } else {
            return try Self.answer(url, 401, ErrorResponse(code: "missing_credentials", message: "no proof"))
        }
        let (data, response) = try await network.send(verify)
        let code = (try? WireJSON.decode(ErrorResponse.self, from: data))?.error.code
        let counter = (try? WireJSON.decode(AssertionResponse.self, from: data)).map { Int($0.counter) }
        let outcome = Outcome(
            status: response.statusCode, code: code, counter: counter, keyID: header(AttestKitHeaderNames.keyID))
        log.withLock { $0.append(outcome) }
        let validated = try? WireJSON.decode(DeviceCheckValidateResponse.self, from: data)
        if response.statusCode == 200, validated?.valid == false {
            return try Self.answer(url, 403, ErrorResponse(code: "device_token_invalid", message: "invalid"))
        }
        guard
            let http = HTTPURLResponse(
                url: url, statusCode: response.statusCode, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "application/json"])
        else { throw URLError(.badServerResponse) }
        return (data, http)
    }

    static func post(_ url: URL, _ body: some Encodable) throws -> URLRequest {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue(ServeProcess.backendAuthorization, forHTTPHeaderField: "Authorization")
        request.httpBody = try WireJSON.encode(body)
        return request
    }

    static func answer(_ url: URL, _ status: Int, _ body: ErrorResponse) throws -> (Data, HTTPURLResponse) {
        guard let http = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: nil)
        else { throw URLError(.badServerResponse) }
        return (body.json, http)
    }

    /// A reward request of the app, for a limited-use session token: `POST https://app.example/v1/rewards`.
    static func reward() -> URLRequest {
        guard let url = URL(string: "https://\(host)/v1/rewards") else { fatalError("the reward URL is valid") }
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        return request
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
