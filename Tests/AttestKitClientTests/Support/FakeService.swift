import AttestKitClient
import AttestKitWire
import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The AttestKit service and the app's server in one in-process ``HTTPTransport``, scripted: challenges and
/// registrations of `https://attest.example`, the app's requests to `https://app.example`. It verifies nothing
/// (the end-to-end tests do, against `attestkit serve`): it answers what the test says, and records what the
/// client sent, so that the client's own decisions can be counted.
final class FakeService: HTTPTransport, @unchecked Sendable {
    static let serviceURL = URL(string: "https://attest.example")!
    static let appURL = URL(string: "https://app.example/v1/orders?n=1")!

    /// A scripted answer.
    enum Answer: Sendable {
        /// A status with the service's error body (no body for `nil`).
        case status(Int, String?)
        /// No answer: the connection failed.
        case drop
        /// 201 with a `TokenResponse` (for `POST /v1/tokens`).
        case token(String, Date)
        /// 429 `attestation_deferred` with `Retry-After` set to this text (none for `nil`): the service's ramp.
        case deferred(String?)
        /// A status with a body that is not the service's (a proxy's or a gateway's page).
        case page(Int, String)
    }

    /// A request the app's server received: the proof it carried.
    struct AppRequest: Sendable {
        let keyID: String?
        let timestamp: String?
        let challenge: String?
        let deviceToken: String?
        let extra: String?
        let debugToken: String?
        let authorization: String?
        let hasAssertion: Bool
        /// The request's path.
        var path = ""
    }

    /// A `POST /v1/tokens` the service received: the proof it carried.
    struct TokenRequest: Sendable {
        let keyID: String?
        let hasAssertion: Bool
        let debugToken: String?
    }

    private let lock = NSLock()
    private var registrationScript: [Answer] = []
    private var registrations: [(keyID: String, attestation: String, clientData: String?)] = []
    private var challengeCount: [String: Int] = [:]
    private var attestChallengeLog: [String?] = []
    private var challengeAppIDLog: [String?] = []
    /// Decides the answer to an attest challenge from the key id it names (a challenge when it returns `nil`).
    private var attestChallengeAnswer: @Sendable (String?) -> Answer? = { _ in nil }
    private var appRequests: [AppRequest] = []
    private var tokenLog: [TokenRequest] = []
    private var keyAttestationLog: [KeyAttestationRequest] = []
    private var keyAttestationScript: [Answer] = []
    private var tokenAnswer: @Sendable (Int) -> Answer = { _ in .status(503, "tokens_not_configured") }
    private var tokenDelayNanoseconds: UInt64 = 0
    private var registrationDelayNanoseconds: UInt64 = 0
    /// Decides the app server's answer to a request (200 `{"ok":true}` when it returns `nil`).
    private var appAnswer: @Sendable (AppRequest) -> Answer? = { _ in nil }
    /// The service's clock, when the test set one: every answer then carries its `Date` header.
    private var serviceNow: (@Sendable () -> Date)?
    /// The id every challenge answer carries, when the test set one (`c1`, `c2`, ... otherwise).
    private var fixedChallengeID: String?

    /// Every challenge answer carries `id` as its challenge id.
    func answerChallengeIDs(_ id: String) { locked { fixedChallengeID = id } }

    /// The service's clock is `now`: challenges expire 300 s after it and every answer carries it as its `Date`
    /// header. Without it, challenges expire 300 s after the real time and answers carry no `Date` header.
    func serviceClock(_ now: @escaping @Sendable () -> Date) { locked { serviceNow = now } }
    /// The next registrations answer these, in order, then 201.
    func scriptRegistrations(_ answers: [Answer]) { locked { registrationScript = answers } }
    /// Attest challenges are answered by `answer(keyId)`: a challenge when it returns `nil`.
    func answerAttestChallenges(_ answer: @escaping @Sendable (String?) -> Answer?) {
        locked { attestChallengeAnswer = answer }
    }
    /// The key id named by every attest challenge request received, in order.
    var attestChallengeKeyIDs: [String?] { locked { attestChallengeLog } }
    /// The `appId` named by every challenge request received (either purpose), in order.
    var challengeAppIDs: [String?] { locked { challengeAppIDLog } }
    /// The app server answers with `answer`.
    func answerApp(_ answer: @escaping @Sendable (AppRequest) -> Answer?) { locked { appAnswer = answer } }

    /// `POST /v1/tokens` answers `answer(n)` for its n-th request (from 1).
    func answerTokens(_ answer: @escaping @Sendable (Int) -> Answer) { locked { tokenAnswer = answer } }
    /// `POST /v1/tokens` answers only after this delay.
    func tokenDelay(milliseconds: UInt64) { locked { tokenDelayNanoseconds = milliseconds * 1_000_000 } }

    /// Holds every answer to `POST /v1/attestations` this long.
    func registrationDelay(milliseconds: UInt64) {
        locked { registrationDelayNanoseconds = milliseconds * 1_000_000 }
    }
    /// The next key attestations answer these, in order, then 201 with the key and its app key.
    func scriptKeyAttestations(_ answers: [Answer]) { locked { keyAttestationScript = answers } }
    /// Every `POST /v1/key-attestations` received.
    var keyAttestationRequests: [KeyAttestationRequest] { locked { keyAttestationLog } }
    /// Every `POST /v1/tokens` received.
    var tokenRequests: [TokenRequest] { locked { tokenLog } }

    /// Every registration attempt: the key and the Base64 attestation sent.
    var registrationAttempts: [(keyID: String, attestation: String, clientData: String?)] { locked { registrations } }
    /// Challenges issued, by purpose.
    func challenges(_ purpose: String) -> Int { locked { challengeCount[purpose] ?? 0 } }
    /// Every request the app's server received.
    var requests: [AppRequest] { locked { appRequests } }

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard let url = request.url else { throw URLError(.badURL) }
        let serviceTime = locked { serviceNow }.map { $0() }
        let answer: Answer
        var body = "{}"
        var status = 200
        switch (url.host ?? "", url.path) {
        case ("attest.example", "/v1/challenges"):
            let message = try WireJSON.decode(ChallengeRequest.self, from: request.httpBody ?? Data())
            let purpose = message.purpose ?? "attest"
            let (number, refusal) = locked {
                if purpose == "attest" { attestChallengeLog.append(message.keyId) }
                challengeAppIDLog.append(message.appId)
                let refusal = purpose == "attest" ? attestChallengeAnswer(message.keyId) : nil
                if refusal == nil { challengeCount[purpose, default: 0] += 1 }
                return (challengeCount.values.reduce(0, +), refusal)
            }
            let bytes = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            let response = ChallengeResponse(
                challengeId: locked { fixedChallengeID } ?? "c\(number)", challenge: bytes, purpose: purpose,
                expiresAt: APITime.format((serviceTime ?? Date()).addingTimeInterval(300)))
            body = String(decoding: try WireJSON.encode(response), as: UTF8.self)
            status = 201
            answer = refusal ?? .status(201, nil)
        case ("attest.example", "/v1/attestations"):
            let message = try WireJSON.decode(AttestationRequest.self, from: request.httpBody ?? Data())
            let delay = locked { registrationDelayNanoseconds }
            if delay > 0 { try await Task.sleep(nanoseconds: delay) }
            answer = locked {
                registrations.append((message.keyId, message.attestation, message.clientData))
                return registrationScript.isEmpty ? .status(201, nil) : registrationScript.removeFirst()
            }
            // The record, with the app's bytes (the client data after its 32 challenge bytes) when it has any.
            let appData = message.clientData.flatMap { Data(base64Encoded: $0) }.map {
                $0.dropFirst(32).base64EncodedString()
            }
            let record = KeyRecordResponse(
                keyId: message.keyId, appId: "ABCDE12345.com.example.client", environment: "development",
                state: "active", counter: 0, createdAt: APITime.format(Date()), riskStatus: "unknown", stepUp: false,
                appData: appData)
            body = String(decoding: try WireJSON.encode(record), as: UTF8.self)
        case ("attest.example", "/v1/key-attestations"):
            let message = try WireJSON.decode(KeyAttestationRequest.self, from: request.httpBody ?? Data())
            answer = locked {
                keyAttestationLog.append(message)
                return keyAttestationScript.isEmpty ? .status(201, nil) : keyAttestationScript.removeFirst()
            }
            let record = KeyAttestationResponse(
                keyId: message.keyId, appId: "ABCDE12345.com.example.client", environment: "development",
                state: "active", counter: 0, createdAt: APITime.format(Date()), riskStatus: "unknown", stepUp: false,
                appKey: .init(thumbprint: "thumbprint-of-the-app-key"))
            body = String(decoding: try WireJSON.encode(record), as: UTF8.self)
        case ("attest.example", "/v1/tokens"):
            func header(_ name: String) -> String? { request.value(forHTTPHeaderField: name) }
            let seen = TokenRequest(
                keyID: header(AttestKitHeaderNames.keyID), hasAssertion: header(AttestKitHeaderNames.assertion) != nil,
                debugToken: header(AttestKitHeaderNames.debugToken))
            let (number, delay) = locked {
                tokenLog.append(seen)
                return (tokenLog.count, tokenDelayNanoseconds)
            }
            if delay > 0 { try await Task.sleep(nanoseconds: delay) }
            answer = locked { tokenAnswer }(number)
        case ("app.example", _):
            func header(_ name: String) -> String? { request.value(forHTTPHeaderField: name) }
            let seen = AppRequest(
                keyID: header(AttestKitHeaderNames.keyID), timestamp: header(AttestKitHeaderNames.timestamp),
                challenge: header(AttestKitHeaderNames.challenge),
                deviceToken: header(AttestKitHeaderNames.deviceToken),
                extra: header("X-Risk-Signal"), debugToken: header(AttestKitHeaderNames.debugToken),
                authorization: header("Authorization"), hasAssertion: header(AttestKitHeaderNames.assertion) != nil,
                path: url.path)
            answer = locked {
                appRequests.append(seen)
                return appAnswer(seen) ?? .status(200, nil)
            }
            body = #"{"ok":true}"#
        default:
            throw URLError(.unsupportedURL)
        }
        var headers: [String: String]?
        switch answer {
        case .deferred(let retryAfter):
            status = 429
            body = String(
                decoding: ErrorResponse(code: "attestation_deferred", message: "scripted").json, as: UTF8.self)
            headers = retryAfter.map { ["Retry-After": $0] }
        case .drop:
            throw URLError(.networkConnectionLost)
        case .token(let token, let expiresAt):
            status = 201
            body = String(
                decoding: try WireJSON.encode(TokenResponse(token: token, expiresAt: APITime.format(expiresAt))),
                as: UTF8.self)
        case .page(let code, let text):
            status = code
            body = text
        case .status(let code, let errorCode):
            if code >= 300 {
                status = code
                body =
                    errorCode.map { String(decoding: ErrorResponse(code: $0, message: "scripted").json, as: UTF8.self) }
                    ?? ""
            } else if code != 200 {
                status = code
            }
        }
        if let serviceTime { headers = (headers ?? [:]).merging(["Date": Self.httpDate(serviceTime)]) { $1 } }
        guard
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers)
        else { throw URLError(.badServerResponse) }
        return (Data(body.utf8), response)
    }

    /// `date` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), as a server writes its `Date` header.
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    private func locked<Value>(_ body: () -> Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}

/// A clock the test moves.
final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var date = Date(timeIntervalSince1970: 1_763_700_000)

    var now: Date {
        lock.lock()
        defer { lock.unlock() }
        return date
    }

    func advance(_ seconds: TimeInterval) {
        lock.lock()
        defer { lock.unlock() }
        date = date.addingTimeInterval(seconds)
    }

    /// Sets the clock to `newDate` (a device clock set by hand), forward or back.
    func set(_ newDate: Date) {
        lock.lock()
        defer { lock.unlock() }
        date = newDate
    }
}
