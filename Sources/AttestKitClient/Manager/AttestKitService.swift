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
        /// When the service stops accepting the challenge, when it said.
        public let expiresAt: Date?

        /// Creates a challenge.
        public init(id: String, bytes: Data, expiresAt: Date? = nil) {
            self.id = id
            self.bytes = bytes
            self.expiresAt = expiresAt
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

    /// Creates a client of the service at `baseURL`.
    public init(baseURL: URL, transport: any HTTPTransport = URLSessionTransport(), timeout: TimeInterval = 30) {
        self.baseURL = baseURL
        self.transport = transport
        self.timeout = timeout
    }

    /// `POST /v1/challenges`.
    /// - Parameters:
    ///   - purpose: Attestation or assertion.
    ///   - keyID: For an assertion, the key the challenge is bound to.
    public func challenge(for purpose: Purpose, keyID: String? = nil) async throws -> Challenge {
        var body: [String: String] = ["purpose": purpose.rawValue]
        body["keyId"] = keyID
        let answer = try await post("v1/challenges", body)
        guard let id = answer["challengeId"] as? String, let text = answer["challenge"] as? String,
            let bytes = Data(base64Encoded: text), !bytes.isEmpty
        else {
            throw AttestKitClientError(.invalidResponse, reason: "the challenge answer lacks challengeId or challenge")
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let expiresAt = (answer["expiresAt"] as? String).flatMap { formatter.date(from: $0) }
        return Challenge(id: id, bytes: bytes, expiresAt: expiresAt)
    }

    /// `POST /v1/attestations`: registers an attested key.
    public func registerAttestation(keyID: String, attestation: Data, challengeID: String) async throws {
        _ = try await post(
            "v1/attestations",
            ["keyId": keyID, "attestation": attestation.base64EncodedString(), "challengeId": challengeID])
    }

    private func post(_ path: String, _ body: [String: String]) async throws -> [String: Any] {
        var request = URLRequest(url: baseURL.appendingPathComponent(path), timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        let (data, response): (Data, HTTPURLResponse)
        do {
            (data, response) = try await transport.send(request)
        } catch {
            throw AttestKitClientError.wrapping(error, as: .transport, "\(path) failed")
        }
        try Self.check(data, response)
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw AttestKitClientError(.invalidResponse, reason: "the answer of \(path) is not a JSON object")
        }
        return object
    }

    /// Throws ``AttestKitClientError/Code/httpError`` for a status other than 2xx, with the service's
    /// `{"error": {"code", "message"}}` when the body has it.
    static func check(_ data: Data, _ response: HTTPURLResponse) throws {
        guard !(200..<300).contains(response.statusCode) else { return }
        let error = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["error"] as? [String: Any]
        let code = error?["code"] as? String
        let message = error?["message"] as? String
        throw AttestKitClientError(
            .httpError, status: response.statusCode, serviceCode: code,
            reason: message ?? "HTTP \(response.statusCode)")
    }
}
