public import AsyncHTTPClient
public import AttestKit
public import Foundation
public import Logging

/// A client of Apple's DeviceCheck two-bit API (docs/apple-formats.md §6): query, update and validate per-device data.
///
/// ```swift
/// let tokens = try AppleTokenProvider(privateKeyPEM: p8, keyID: "ABC123DEFG", teamID: "TEAM123456")
/// let deviceCheck = DeviceCheckClient(configuration: .init(environment: .production), tokens: tokens)
/// let state = try await deviceCheck.query(deviceToken: tokenFromApp)
/// if !state.bit0 { try await deviceCheck.update(deviceToken: tokenFromApp, bit0: true) }
/// ```
///
/// Each call POSTs JSON (`device_token`, `transaction_id` a new UUID, `timestamp` in milliseconds, and for
/// updates `bit0`/`bit1` when given) with `Authorization: Bearer <provider token>`. 429, 5xx and connection
/// failures are retried per ``TransportConfiguration/retry`` within ``TransportConfiguration/timeout``; every other
/// error status becomes an ``AppleServiceError`` with Apple's status and text. Device tokens are never logged.
public struct DeviceCheckClient: Sendable {
    /// Where and how to call.
    public struct Configuration: Sendable, Hashable {
        /// The base URL, without a trailing slash: Apple's for an environment, or a mock's.
        public var baseURL: String
        /// Deadline, size cap and retries.
        public var transport: TransportConfiguration

        /// Apple's DeviceCheck in `environment` (`AppAttestEnvironment.deviceCheckBaseURL`).
        public init(environment: AppAttestEnvironment, transport: TransportConfiguration = .init()) {
            self.init(baseURL: environment.deviceCheckBaseURL, transport: transport)
        }

        /// Another base URL, such as `attestkit mock-apple`'s `http://127.0.0.1:PORT`.
        public init(baseURL: String, transport: TransportConfiguration = .init()) {
            self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
            self.transport = transport
        }
    }

    /// The configuration in use.
    public let configuration: Configuration
    private let tokens: AppleTokenProvider
    private let http: AppleHTTPTransport
    private let now: @Sendable () -> Date

    /// Creates a client.
    ///
    /// - Parameters:
    ///   - configuration: Base URL, deadline, size cap and retries.
    ///   - tokens: The provider token source, shared with the receipt exchange.
    ///   - httpClient: The HTTP client; the shared one by default.
    ///   - clock: The clock retries wait on; inject one in tests.
    ///   - now: The clock of the `timestamp` field and of `Retry-After` dates.
    public init(
        configuration: Configuration,
        tokens: AppleTokenProvider,
        httpClient: HTTPClient = .shared,
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.tokens = tokens
        self.http = AppleHTTPTransport(
            client: httpClient, configuration: configuration.transport, clock: clock, now: now)
        self.now = now
    }

    /// Reads a device's two bits.
    ///
    /// - Parameters:
    ///   - deviceToken: Base64 of `DCDevice.generateToken()`, without line breaks.
    ///   - logger: Receives debug messages about the call; none by default.
    /// - Returns: The bits and the month of their last update, or ``DeviceCheckQueryResult/notFound`` for a device
    ///   whose bits were never set.
    /// - Throws: ``AppleServiceError``.
    public func query(deviceToken: String, logger: Logger? = nil) async throws(AppleServiceError)
        -> DeviceCheckQueryResult
    {
        let response = try await call(
            "query_two_bits", DeviceCheckRequestBody(deviceToken: deviceToken, at: now()), logger: logger)
        return try Self.parseQuery(response)
    }

    /// Sets one or both bits of a device. A bit left `nil` keeps its value.
    ///
    /// - Parameters:
    ///   - deviceToken: Base64 of `DCDevice.generateToken()`, without line breaks.
    ///   - bit0: The new bit 0, or `nil`.
    ///   - bit1: The new bit 1, or `nil`.
    ///   - logger: Receives debug messages about the call; none by default.
    /// - Throws: ``AppleServiceError``; ``AppleServiceError/Code/badBits`` when Apple wants at least one bit.
    public func update(
        deviceToken: String, bit0: Bool? = nil, bit1: Bool? = nil, logger: Logger? = nil
    ) async throws(AppleServiceError) {
        _ = try await call(
            "update_two_bits", DeviceCheckRequestBody(deviceToken: deviceToken, at: now(), bit0: bit0, bit1: bit1),
            logger: logger)
    }

    /// Asks Apple whether a device token is valid (that it comes from a genuine device running your app).
    ///
    /// - Parameters:
    ///   - deviceToken: Base64 of `DCDevice.generateToken()`, without line breaks.
    ///   - logger: Receives debug messages about the call; none by default.
    /// - Throws: ``AppleServiceError``; ``AppleServiceError/Code/badDeviceToken`` for a token Apple rejects.
    public func validate(deviceToken: String, logger: Logger? = nil) async throws(AppleServiceError) {
        _ = try await call(
            "validate_device_token", DeviceCheckRequestBody(deviceToken: deviceToken, at: now()), logger: logger)
    }

    /// POSTs the body to `/v1/<endpoint>` and returns a 200 answer; anything else is thrown, classified.
    private func call(
        _ endpoint: String, _ body: DeviceCheckRequestBody, logger: Logger?
    ) async throws(AppleServiceError) -> AppleHTTPTransport.Response {
        // One token for the call and its retries, so that a 401 drops that token and no other.
        let token = try await tokens.token()
        let request = AppleHTTPTransport.Request(
            endpoint: endpoint, url: "\(configuration.baseURL)/v1/\(endpoint)", contentType: "application/json",
            body: try body.encoded(),
            authorization: { () async throws(AppleServiceError) -> String in "Bearer \(token)" })
        let response = try await http.send(request, logger: logger ?? Self.silent)
        guard response.status == 200 else {
            if response.status == 401 { await tokens.invalidate(token) }
            throw AppleStatusClassifier.error(
                status: response.status, text: response.text, service: .deviceCheck, attempts: response.attempts,
                retryAfter: response.retryAfter)
        }
        return response
    }

    /// The bits of a 200 answer to a query, or `notFound` for Apple's "Failed to find bit state".
    static func parseQuery(_ response: AppleHTTPTransport.Response) throws(AppleServiceError) -> DeviceCheckQueryResult
    {
        let text = response.text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        if text.contains("failed to find bit state") || text.contains("bit state not found") {
            return .notFound
        }
        struct Answer: Decodable {
            var bit0: Bool
            var bit1: Bool
            var last_update_time: String?
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body)) else {
            throw AppleServiceError(
                .unexpectedResponse, "a query answer is neither the bits nor \"Failed to find bit state\"",
                status: response.status, appleText: response.text, attempts: response.attempts)
        }
        var month: DeviceCheckMonth?
        if let time = answer.last_update_time {
            guard let parsed = DeviceCheckMonth(time) else {
                throw AppleServiceError(
                    .unexpectedResponse, "last_update_time is not YYYY-MM", status: response.status,
                    appleText: response.text, attempts: response.attempts)
            }
            month = parsed
        }
        return .bits(bit0: answer.bit0, bit1: answer.bit1, lastUpdateTime: month)
    }

    /// A logger that drops everything.
    static let silent = Logger(label: "attestkit.apple.silent", factory: { _ in SwiftLogNoOpLogHandler() })
}
