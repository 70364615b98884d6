import AttestKitWire
public import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The calls the app makes to the AttestKit service itself: challenges and attestations (API v1).
///
/// Only these two endpoints are public-facing; assertions travel on the app's own requests, which its server
/// verifies (with `AttestKitMiddleware` or `POST /v1/assertions/verify`).
public struct AttestKitService: Sendable {
    /// A challenge issued by the service.
    public struct Challenge: Sendable, Hashable {
        /// The challenge id (for an assertion's client data, and for `POST /v1/attestations`).
        public let id: String
        /// The random challenge bytes (for an attestation, the app passes SHA-256 of them to `attestKey`).
        public let bytes: Data
        /// When the service stops accepting the challenge, by the service's clock, when it said.
        public let expiresAt: Date?
        /// What was left of the challenge's life when the answer arrived, by the service's clock (``expiresAt``
        /// less the time of the answer's `Date` header), or `nil` when the answer said no expiry or had no `Date`
        /// header. ``AppAttestManager`` counts it on the device's clock from the answer's arrival, so that a
        /// device clock set wrong neither throws a fresh challenge away nor keeps an expired one.
        public let lifetime: TimeInterval?

        /// Creates a challenge.
        public init(id: String, bytes: Data, expiresAt: Date? = nil, lifetime: TimeInterval? = nil) {
            self.id = id
            self.bytes = bytes
            self.expiresAt = expiresAt
            self.lifetime = lifetime
        }
    }

    /// What a challenge is for.
    public enum Purpose: String, Sendable, Hashable {
        /// An attestation.
        case attest
        /// An assertion.
        case assert
    }

    /// The service's base URL, e.g. `https://attest.example.com`.
    public let baseURL: URL
    /// The transport.
    public let transport: any HTTPTransport
    /// The time allowed for each call.
    public let timeout: TimeInterval
    /// The app's App ID (`TEAMID.bundle.id`), sent with attestation challenges (`appId`) so that a service
    /// accepting several apps knows which app's attestation ramp to apply; `nil` sends none (a service accepting
    /// one app implies it). The service binds the challenge to it: it must be the app's own, or the attestation is
    /// refused (403 `challenge_app_mismatch`).
    public let appID: String?

    /// Creates a client of the service at `baseURL`.
    /// - Parameters:
    ///   - baseURL: The service's base URL.
    ///   - transport: The transport (URLSession by default).
    ///   - timeout: The time allowed for each call, in seconds.
    ///   - appID: The app's App ID, for a service that accepts several apps and ramps attestation (see ``appID``).
    public init(
        baseURL: URL, transport: any HTTPTransport = URLSessionTransport(), timeout: TimeInterval = 30,
        appID: String? = nil
    ) {
        self.baseURL = baseURL
        self.transport = transport
        self.timeout = timeout
        self.appID = appID
    }

    /// `POST /v1/challenges` (`ChallengeRequest`, answered with `ChallengeResponse`).
    /// - Parameters:
    ///   - purpose: Attestation or assertion.
    ///   - keyID: For an assertion, the key the challenge is bound to; for an attestation, the generated key to be
    ///     attested, by which a service ramping App Attest up decides whether this install attests now (with
    ///     ``appID``, when set).
    /// - Throws: ``AttestKitClientError``; ``AttestKitClientError/Code/httpError`` with status 429 and service code
    ///   `attestation_deferred` when the service defers the attestation (``AppAttestManager`` waits for its
    ///   `Retry-After`).
    public func challenge(for purpose: Purpose, keyID: String? = nil) async throws -> Challenge {
        let message = ChallengeRequest(
            purpose: purpose.rawValue, keyId: keyID, appId: purpose == .attest ? appID : nil)
        let (data, response) = try await exchange("v1/challenges", message)
        let answer = try Self.decode(ChallengeResponse.self, from: data, "the challenge answer")
        guard let bytes = Data(base64Encoded: answer.challenge), !bytes.isEmpty else {
            throw AttestKitClientError(.invalidResponse, reason: "the challenge answer has no challenge bytes")
        }
        // An id the service would refuse to find again (its form is 1 to 128 base64url characters) is refused here,
        // before an attestation or a request is spent on it.
        guard RequestBinding.isChallengeID(answer.challengeId) else {
            throw AttestKitClientError(.invalidResponse, reason: "the challenge answer's id is not a challenge id")
        }
        let expiresAt = APITime.parse(answer.expiresAt)
        let lifetime = expiresAt.flatMap { ServiceClock.lifetime(until: $0, answeredBy: response) }
        return Challenge(id: answer.challengeId, bytes: bytes, expiresAt: expiresAt, lifetime: lifetime)
    }

    /// `POST /v1/attestations` (`AttestationRequest`): registers an attested key.
    /// - Throws: ``AttestKitClientError``; ``AttestKitClientError/Code/invalidResponse`` for a 2xx whose body is not
    ///   the service's record of this key (a proxy's or a gateway's page: the key may not be registered, so the
    ///   attestation is kept and sent again).
    public func registerAttestation(keyID: String, attestation: Data, challengeID: String) async throws {
        let request = AttestationRequest(
            keyId: keyID, attestation: attestation.base64EncodedString(), challengeId: challengeID)
        let record = try await post(
            "v1/attestations", request, answer: KeyRecordResponse.self, "the registration answer")
        guard record.keyId == keyID else {
            throw AttestKitClientError(.invalidResponse, reason: "the registration answer names another key")
        }
    }

    /// The largest answer of the service read, in bytes.
    static let maximumAnswerSize = 64 * 1024

    /// Posts `message` to `path` and decodes the answer as `Answer`.
    /// - Throws: What ``post(_:_:)`` throws; ``AttestKitClientError/Code/invalidResponse`` naming `what` for an
    ///   answer that is not an `Answer`.
    func post<Answer: Decodable>(
        _ path: String, _ message: some Encodable, answer: Answer.Type, _ what: String
    ) async throws -> Answer {
        try Self.decode(Answer.self, from: try await post(path, message), what)
    }

    /// `data` decoded as `Answer`.
    /// - Throws: ``AttestKitClientError/Code/invalidResponse`` naming `what` for an answer that is not an `Answer`.
    static func decode<Answer: Decodable>(_ type: Answer.Type, from data: Data, _ what: String) throws -> Answer {
        do {
            return try WireJSON.decode(Answer.self, from: data)
        } catch {
            throw AttestKitClientError(.invalidResponse, reason: "\(what) is not a \(Answer.self)")
        }
    }

    /// Posts `message` to `path` and returns the answer's body (a 2xx, at most ``maximumAnswerSize`` bytes).
    /// - Throws: As ``exchange(_:_:)``.
    func post(_ path: String, _ message: some Encodable) async throws -> Data {
        try await exchange(path, message).0
    }

    /// Posts `message` to `path` and returns the answer: its body (a 2xx, at most ``maximumAnswerSize`` bytes) and
    /// its response.
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/transport``,
    ///   ``AttestKitClientError/Code/httpError`` for a status other than 2xx,
    ///   ``AttestKitClientError/Code/invalidResponse`` for an answer over the size.
    func exchange(_ path: String, _ message: some Encodable) async throws -> (Data, HTTPURLResponse) {
        var request = URLRequest(url: baseURL.appendingPathComponent(path), timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        do {
            request.httpBody = try WireJSON.encode(message)
        } catch {
            throw AttestKitClientError(.invalidRequest, reason: "the \(path) message cannot be encoded")
        }
        let (data, response): (Data, HTTPURLResponse)
        do {
            (data, response) = try await transport.send(request)
        } catch {
            throw AttestKitClientError.wrapping(error, as: .transport, "\(path) failed")
        }
        try Self.check(data, response)
        guard data.count <= Self.maximumAnswerSize else {
            throw AttestKitClientError(.invalidResponse, reason: "the answer of \(path) is too large")
        }
        return (data, response)
    }

    /// Throws ``AttestKitClientError/Code/httpError`` for a status other than 2xx, with the service's
    /// `ErrorResponse` (`{"error": {"code", "message"}}`) when the body is one.
    static func check(_ data: Data, _ response: HTTPURLResponse) throws {
        guard !(200..<300).contains(response.statusCode) else { return }
        let error =
            data.count <= maximumAnswerSize ? try? WireJSON.decode(ErrorResponse.self, from: data).error : nil
        var failure = AttestKitClientError(
            .httpError, status: response.statusCode, serviceCode: error?.code,
            reason: error?.message ?? "HTTP \(response.statusCode)")
        failure.retryAfterSeconds = retryAfterSeconds(response)
        throw failure
    }

    /// The `Retry-After` header in its integer form (at most 9 digits), or `nil` (absent, an HTTP date, malformed).
    static func retryAfterSeconds(_ response: HTTPURLResponse) -> Int? {
        let field = response.allHeaderFields.first { name, _ in
            (name as? String)?.caseInsensitiveCompare("Retry-After") == .orderedSame
        }
        guard let text = (field?.value as? String)?.trimmingCharacters(in: .whitespaces), !text.isEmpty,
            text.utf8.count <= 9, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else { return nil }
        return Int(text)
    }
}
