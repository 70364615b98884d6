import AttestKit
import AttestKitShutdown
public import AttestKitTesting
import HTTPTypes
import Hummingbird
import JWTKit
public import Logging
import NIOCore
public import ServiceLifecycle

/// A mock of Apple's DeviceCheck and App Attest receipt services on loopback, faithful to their quirks
/// (docs/apple-formats.md §5, §6), for tests and for `attestkit mock-apple`. Apple is never called.
///
/// It serves `POST /v1/query_two_bits`, `/v1/update_two_bits`, `/v1/validate_device_token` (DeviceCheck, see
/// ``MockAppleServer/Configuration``) and `/v1/attestationData` (the receipt exchange, backed by a software Apple),
/// checks provider tokens against the configured public key, keeps bits per team and device in memory, and injects
/// faults (``MockAppleFault``): statuses such as 429 and 503 (with a `Retry-After` if asked), slow answers, dropped
/// connections. Other methods on these paths get 405.
///
/// ```swift
/// let mock = try MockAppleServer(
///     configuration: .init(verificationKeyPEM: publicKeyPEM, keyID: "ABC123DEFG", teamID: "TEAM123456"),
///     softwareApple: apple)
/// try await mock.withRunning { baseURL in
///     let client = DeviceCheckClient(configuration: .init(baseURL: baseURL), tokens: tokens)
///     ...
/// }
/// ```
///
/// It is a `Service` (swift-service-lifecycle): ``run()`` serves until cancelled or gracefully shut down. Run it
/// once.
public final class MockAppleServer: Service, Sendable, CustomStringConvertible {
    /// The configuration in use.
    public let configuration: Configuration
    /// Its memory: bits, pending faults and request counts; inject faults here while it runs.
    public let state: MockAppleState
    private let deviceCheck: MockDeviceCheck
    private let receipts: MockReceiptExchange
    private let logger: Logger
    private let bound = PortPromise()

    /// Creates a mock (it does not listen before ``run()``).
    ///
    /// - Parameters:
    ///   - configuration: Address, token key, environment, risk metric, faults and clock.
    ///   - softwareApple: The software Apple that signed the receipts the mock will exchange, and signs new ones.
    ///   - logger: Receives a debug line per request (endpoint and status; never tokens or bodies). Silent by default.
    /// - Throws: ``MockAppleError/Code/invalidConfiguration`` when the key is not a PEM P-256 public key, the risk
    ///   metric is negative, or a fault's status is outside ``MockAppleFault/statuses``.
    public init(configuration: Configuration, softwareApple: SoftwareApple, logger: Logger? = nil)
        throws(MockAppleError)
    {
        let publicKey: ES256PublicKey
        do {
            publicKey = try ES256PublicKey(pem: configuration.verificationKeyPEM)
        } catch {
            throw MockAppleError(.invalidConfiguration, "the verification key is not a PEM P-256 public key")
        }
        guard configuration.riskMetric >= 0 else {
            throw MockAppleError(.invalidConfiguration, "the risk metric is not negative")
        }
        for fault in configuration.faults { try fault.validate() }
        let tokens = MockTokenVerifier(
            publicKey: publicKey, keyID: configuration.keyID, teamID: configuration.teamID,
            lifetime: configuration.tokenLifetime)
        self.configuration = configuration
        self.state = MockAppleState(faults: configuration.faults)
        self.deviceCheck = MockDeviceCheck(tokens: tokens, state: state, now: configuration.now)
        self.receipts = MockReceiptExchange(
            tokens: tokens, state: state, apple: softwareApple, environment: configuration.environment,
            riskMetric: configuration.riskMetric, now: configuration.now)
        self.logger = logger ?? Logger(label: "attestkit.mock-apple", factory: { _ in SwiftLogNoOpLogHandler() })
    }

    /// `MockAppleServer(host:port, environment)`.
    public var description: String {
        "MockAppleServer(\(configuration.host):\(configuration.port), \(configuration.environment.rawValue))"
    }

    /// Serves until the task is cancelled or the service group shuts down gracefully. Cancellation stops it as a
    /// graceful shutdown does: the listener closes first, and requests in flight get a second to finish.
    ///
    /// - Throws: When the address cannot be bound.
    public func run() async throws {
        let router = Router(context: MockAppleRequestContext.self)
        for endpoint in MockAppleEndpoint.allCases {
            let path = RouterPath(endpoint.path)
            router.post(path) { request, context in await self.respond(endpoint, request, context) }
            for method in [HTTPRequest.Method.get, .put, .delete, .patch] {
                router.on(path, method: method) { _, _ in Self.response(.methodNotAllowed) }
            }
        }
        let bound = self.bound
        let application = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: nil),
            onServerRunning: { channel in bound.fulfil(channel.localAddress?.port ?? 0) },
            logger: logger)
        do {
            try await GracefulCancellation.run(application, logger: logger)
        } catch {
            bound.fail(MockAppleError(.notRunning, "the mock stopped: \(error)"))
            throw error
        }
        bound.fail(MockAppleError(.notRunning, "the mock stopped before it was listening"))
    }

    /// The bound port, once the mock listens.
    ///
    /// - Throws: ``MockAppleError/Code/notRunning`` when it failed or stopped before listening.
    public func port() async throws -> Int {
        try await bound.wait()
    }

    /// `http://HOST:PORT`, once the mock listens: the base URL of both DeviceCheck and the receipt exchange
    /// (whose URL is the base URL followed by `/v1/attestationData`). An IPv6 host is bracketed, as a URL writes it:
    /// `http://[::1]:PORT`.
    public func baseURL() async throws -> String {
        Self.baseURL(host: configuration.host, port: try await port())
    }

    /// `http://HOST:PORT`, an IPv6 literal HOST in brackets (its zone's `%` escaped as `%25`, RFC 6874).
    static func baseURL(host: String, port: Int) -> String {
        guard host.contains(":"), !host.hasPrefix("[") else { return "http://\(host):\(port)" }
        return "http://[\(host.replacing("%", with: "%25"))]:\(port)"
    }

    /// Runs the mock, calls `body` with its base URL once it listens, then stops it.
    ///
    /// - Parameter body: What to do while it runs.
    /// - Returns: What `body` returns.
    public func withRunning<Result: Sendable>(
        _ body: (_ baseURL: String) async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.run() }
            let result = try await body(try await self.baseURL())
            group.cancelAll()
            return result
        }
    }

    /// Answers a request, counted in flight until answered.
    private func respond(
        _ endpoint: MockAppleEndpoint, _ request: Request, _ context: MockAppleRequestContext
    ) async -> Response {
        let response = await answer(endpoint, request, context)
        await state.depart(from: endpoint)
        return response
    }

    /// Counts the request, applies a pending fault, else hands the request to its service.
    private func answer(
        _ endpoint: MockAppleEndpoint, _ request: Request, _ context: MockAppleRequestContext
    ) async -> Response {
        var stall: Duration?
        switch await state.arrive(at: endpoint) {
        case .drop:
            logger.debug("mock-apple dropped a connection", metadata: ["endpoint": "\(endpoint)"])
            try? await context.channel.close().get()
            return Response(status: .internalServerError)
        case .status(let status, let text, let retryAfter):
            logger.debug("mock-apple injected a status", metadata: ["endpoint": "\(endpoint)", "status": "\(status)"])
            var response = Self.response(.text(status, text ?? MockAppleAnswer.applesText(for: status)))
            if let retryAfter { response.headers[.retryAfter] = retryAfter }
            return response
        case .delay(let duration):
            try? await Task.sleep(for: duration)
        case .stall(let duration):
            stall = duration
        case nil:
            break
        }
        let limit = endpoint.isDeviceCheck ? MockDeviceCheck.maximumBodySize : MockReceiptExchange.maximumBodySize
        guard let buffer = try? await request.body.collect(upTo: limit) else {
            return Self.response(endpoint.isDeviceCheck ? .badPayload : .receiptBadPayload)
        }
        let body = Array(buffer.readableBytesView)
        let authorization = request.headers[.authorization]
        let answer: MockAppleAnswer
        if endpoint.isDeviceCheck {
            answer = await deviceCheck.answer(endpoint, authorization: authorization, body: body)
        } else {
            answer = await receipts.answer(
                authorization: authorization, contentType: request.headers[.contentType], body: body)
        }
        logger.debug("mock-apple answered", metadata: ["endpoint": "\(endpoint)", "status": "\(answer.status)"])
        guard let stall else { return Self.response(answer) }
        guard !answer.text.isEmpty else {
            // Nothing to hold back but the answer itself (a 304, an update's empty 200): it waits whole, rather than
            // gaining a body its status has none of (a 304's stray byte would be read as the next answer).
            try? await Task.sleep(for: stall)
            return Self.response(answer)
        }
        return Self.response(answer, bodyAfter: stall)
    }

    /// The HTTP response of an answer whose status and headers go at once and whose body (not empty) goes `stall`
    /// later.
    private static func response(_ answer: MockAppleAnswer, bodyAfter stall: Duration) -> Response {
        var headers = HTTPFields()
        if let contentType = answer.contentType { headers[.contentType] = contentType }
        return Response(
            status: HTTPResponse.Status(code: answer.status), headers: headers,
            body: ResponseBody { writer in
                try await Task.sleep(for: stall)
                try await writer.write(ByteBuffer(string: answer.text))
                try await writer.finish(nil)
            })
    }

    /// The HTTP response of an answer.
    private static func response(_ answer: MockAppleAnswer) -> Response {
        var headers = HTTPFields()
        if let contentType = answer.contentType { headers[.contentType] = contentType }
        let status = HTTPResponse.Status(code: answer.status)
        guard !answer.text.isEmpty else { return Response(status: status, headers: headers) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: answer.text)))
    }
}
