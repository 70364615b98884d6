import AttestKitTestSupport
import AsyncHTTPClient
import AttestKit
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle
import Testing

/// The server under test, with everything it talks to:
///
/// - a software Apple (development environment) whose roots are the server's trust anchors;
/// - a ``MockAppleServer`` serving DeviceCheck and the receipt exchange, checking provider tokens against a fresh
///   P-256 key whose `.p8` PEM the server signs with;
/// - an ``AttestKitServer`` on a store of the given kind, with a ``TestClock``;
/// - a ``GuardedApp``: routes behind ``AttestKitMiddleware`` sharing the server's gate.
///
/// By default requests go through HummingbirdTesting's `.router` framework (``Transport/router``): the server's
/// ``AttestKitServer/buildRouter()`` and the guarded app's router, without a socket. Tests whose subject is the
/// connection (deadlines, the peer's address, a second listener, a hung peer) ask for ``Transport/live``: the server
/// and the guarded app listen on 127.0.0.1 and free ports, and an HTTP client sends many requests at once.
///
/// ``with(_:_:_:)`` runs them in one task group and tears everything down, in order, whatever the test does.
/// Every answer of 500 or more is recorded as an issue unless the caller expects it (`allow5xx`): a 500 is a bug.
final class ServerHarness: Sendable {
    /// How requests reach the server and the guarded app.
    enum Transport: Sendable {
        /// HummingbirdTesting's `.router` framework: the routers without a socket. The peer address is unknown
        /// (the rate-limit key is `unknown`), the request's authority is `localhost`.
        case router
        /// Real HTTP on loopback: the server runs (``AttestKitServer/run()``) on 127.0.0.1 and a free port.
        case live
    }

    /// What to change in the server's configuration.
    struct Options: Sendable {
        /// `.router` unless the connection is the subject; a second listener (``backendListener``) is always live.
        var transport = Transport.router
        var appIDs: [AppID] = [Fixture.appID]
        /// The environments the service accepts. Allowing production trusts Apple's roots alone and gives the service
        /// no Apple key (it refuses the software Apple's roots and the mock's hosts then): only refusals that come
        /// before the chain is checked can be tested.
        var environments = EnvironmentPolicy.development
        /// Whether the server gets the Apple key (DeviceCheck, receipt refresh).
        var apple = true
        var adminToken: String? = Fixture.adminToken
        /// `admin.previous-tokens`: none by default.
        var adminPreviousTokens: [String] = []
        var backendTokens: [String] = [Fixture.backendToken]
        /// Whether the harness adds the backend token to requests for backend routes that carry no Authorization
        /// header of their own (tests of the credential itself turn it off).
        var sendsBackendToken = true
        var trustedProxies: [IPNetwork] = []
        var backendListener = false
        var policy = ServerConfiguration.Policy()
        /// Off by default: tests that do not test limits send many requests.
        var rateLimits = ServerConfiguration.RateLimits(
            attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 0, authFailuresPerIP: 0)
        var bodyLimit = 65_536
        var timestampWindow: TimeInterval = 300
        /// The risk metric of the receipts the mock returns.
        var mockRiskMetric = 7
        /// Names of the DeviceCheck bit states.
        var deviceCheckStates: DeviceCheckStates?
        /// Read and idle deadlines and the connection maximum.
        var connectionLimits = ServerConfiguration.ConnectionLimits()
        /// `apple.timeout`.
        var appleTimeout: TimeInterval = 30
        /// `receipt-refresh.batch`.
        var receiptRefreshBatch = 100
        /// `receipt-refresh.concurrency`.
        var receiptRefreshConcurrency = 8
        /// `receipt-refresh.max-per-second`: none by default, since the harness's clock stands still (a shared
        /// budget refills with the injected clock).
        var receiptRefreshMaxPerSecond = 0
        /// Where the server finds Apple (DeviceCheck and the receipt exchange) instead of the mock, e.g. a listener
        /// that never answers.
        var appleBaseURL: String?
        /// The server's logger (silent by default; see ``LogCapture``).
        var logger = ServerHarness.silent
        /// Where an SQLite store's file goes (a small file system, say) instead of a temporary folder.
        var sqliteDirectory: URL?
        /// Session tokens (`tokens.*`); off by default.
        var tokens: TokenService.Configuration?
        /// Whether `POST /v1/tokens` sells tokens for DeviceCheck tokens (`tokens.device-tokens=accept`).
        var tokensAcceptDeviceTokens = false
        /// `debug.tokens`; none by default.
        var debugTokens: [String] = []
        var record: ServerConfiguration.RecordSettings?
        /// The key attestation CA (`key-attestation.*`); off by default.
        var keyAttestationAuthority: AppKeyAuthority?
        /// `enforcement.*`: the route group `default`.
        var enforcement = ServerConfiguration.EnforcementDefaults()
        /// `enforcement.groups`: named route groups; none by default.
        var enforcementGroups: [String: ServerConfiguration.EnforcementDefaults] = [:]
        /// `keys.expire-after`; off by default.
        var keyExpiry: TimeInterval?
        /// `receipt-refresh.active-within`: 30 days by default.
        var receiptRefreshActiveWithin: TimeInterval = 30 * 86_400
        /// `ramp.*`: the attestation ramp (off by default).
        var ramp = AttestationRamp()
        /// `storage.max-clock-skew`: off by default, since the harness's clock is a test clock that PostgreSQL's is
        /// compared with (set it to check the comparison).
        var maxClockSkew: TimeInterval?
    }

    enum Target {
        /// The AttestKit server (its backend listener for backend, operator and metrics routes when it has one).
        case api
        /// The server's public listener, whatever the route.
        case publicListener
        /// The server's backend listener (the public one without a second listener), whatever the route.
        case backendListener
        /// The ``GuardedApp``.
        case guarded
    }

    /// Where requests go: an HTTP client and the listeners' URLs, or the routers' test clients.
    private enum Connection: Sendable {
        case live(HTTPClient)
        case router(api: any TestClientProtocol, guarded: any TestClientProtocol)
    }

    let kind: StoreKind
    let clock: TestClock
    let server: AttestKitServer
    let mock: MockAppleServer
    let store: any AttestationStore
    /// The server's URL (`http://localhost` through the router: the authority the `.router` framework sends).
    let apiURL: String
    /// The backend listener's URL: ``apiURL`` unless the options ask for a second listener.
    let backendURL: String
    let guardedURL: String
    let sendsBackendToken: Bool
    private let connection: Connection

    private init(
        kind: StoreKind, clock: TestClock, server: AttestKitServer, mock: MockAppleServer,
        store: any AttestationStore, apiURL: String, backendURL: String, guardedURL: String, connection: Connection,
        sendsBackendToken: Bool
    ) {
        self.kind = kind
        self.clock = clock
        self.server = server
        self.mock = mock
        self.store = store
        self.apiURL = apiURL
        self.backendURL = backendURL
        self.guardedURL = guardedURL
        self.connection = connection
        self.sendsBackendToken = sendsBackendToken
    }

    static let silent = Logger(label: "attestkit.e2e", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs `body` against a fresh server on a fresh store of `kind`, then stops everything and removes the store.
    static func with<Result: Sendable>(
        _ kind: StoreKind, _ options: Options = Options(), _ body: (ServerHarness) async throws -> Result
    ) async throws -> Result {
        let gate = kind == .postgres ? PostgresTestServer.shared.gate : nil
        await gate?.enter()
        do {
            let result = try await run(kind, options, body)
            await gate?.leave()
            return result
        } catch {
            await gate?.leave()
            throw error
        }
    }

    private static func run<Result: Sendable>(
        _ kind: StoreKind, _ options: Options, _ body: (ServerHarness) async throws -> Result
    ) async throws -> Result {
        let testStore = try await kind.makeStore(in: options.sqliteDirectory)
        defer { testStore.removeFiles() }
        let store = testStore.store
        let clock = TestClock()
        let appleKey = P256.Signing.PrivateKey()
        let mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: appleKey.publicKey.pemRepresentation, keyID: Fixture.appleKeyID,
                teamID: Fixture.teamID, environment: .development, riskMetric: options.mockRiskMetric,
                now: clock.closure),
            softwareApple: Fixture.apple)
        let live = options.transport == .live || options.backendListener
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            group.addTask { try await mock.run() }
            var clientConfiguration = HTTPClient.Configuration()
            clientConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 64
            clientConfiguration.redirectConfiguration = .disallow
            let client: HTTPClient? =
                live ? HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration) : nil
            do {
                var mockURL = try await mock.baseURL()
                if let appleBaseURL = options.appleBaseURL { mockURL = appleBaseURL }
                var configuration = ServerConfiguration(
                    appIDs: options.appIDs, environments: options.environments, host: "127.0.0.1", port: 0,
                    storageURL: "memory:",  // unused: the server is given the store
                    apple: options.apple && !options.environments.allows(.production)
                        ? .init(
                            privateKeyPEM: appleKey.pemRepresentation, keyID: Fixture.appleKeyID,
                            teamID: Fixture.teamID, deviceCheckEnvironment: .development,
                            deviceCheckBaseURL: mockURL, receiptExchangeURL: mockURL + "/v1/attestationData",
                            timeout: options.appleTimeout)
                        : nil,
                    trustAnchors: options.environments.allows(.production)
                        ? try TrustAnchors.apple() : Fixture.apple.trustAnchors,
                    timestampWindow: options.timestampWindow,
                    policy: options.policy, rateLimits: options.rateLimits, bodyLimit: options.bodyLimit,
                    connectionLimits: options.connectionLimits,
                    deviceCheckStates: options.deviceCheckStates, adminToken: options.adminToken,
                    adminPreviousTokens: options.adminPreviousTokens, backendTokens: options.backendTokens,
                    backendListener: options.backendListener ? .init(host: "127.0.0.1", port: 0) : nil,
                    trustedProxies: options.trustedProxies, logLevel: .critical,
                    // Background rounds run once at start (nothing to do yet); tests call round() themselves.
                    receiptRefreshInterval: .seconds(3_600), receiptRefreshBatch: options.receiptRefreshBatch,
                    challengeCleanupInterval: .seconds(3_600))
                configuration.tokens = options.tokens
                configuration.receiptRefreshConcurrency = options.receiptRefreshConcurrency
                configuration.receiptRefreshMaxPerSecond = options.receiptRefreshMaxPerSecond
                configuration.tokensAcceptDeviceTokens = options.tokensAcceptDeviceTokens
                configuration.debugTokens = options.debugTokens
                configuration.record = options.record
                configuration.keyAttestationAuthority = options.keyAttestationAuthority
                configuration.enforcement = options.enforcement
                configuration.enforcementGroups = options.enforcementGroups
                configuration.keyExpiry = options.keyExpiry
                configuration.receiptRefreshActiveWithin = options.receiptRefreshActiveWithin
                configuration.ramp = options.ramp
                configuration.maxClockSkew = options.maxClockSkew
                let server = try AttestKitServer(
                    configuration: configuration, store: store, logger: options.logger, now: clock.closure)
                let guarded = GuardedApp(gate: server.gate, bodyLimit: options.bodyLimit, logger: silent)
                guard let client else {
                    // What the server's application does before it listens.
                    try await store.prepare()
                    let harness = ServerHarness(
                        kind: kind, clock: clock, server: server, mock: mock, store: store,
                        apiURL: "http://localhost", backendURL: "http://localhost", guardedURL: "http://localhost",
                        connection: .router(
                            api: try await routerClient(server.buildRouter(), logger: options.logger),
                            guarded: try await routerClient(guarded.router(), logger: silent)),
                        sendsBackendToken: options.sendsBackendToken)
                    let result = try await body(harness)
                    await stop(nil, testStore)
                    group.cancelAll()
                    return result
                }
                group.addTask { try await server.run() }
                let port = try await server.boundPort()
                let backendURL =
                    options.backendListener
                    ? "http://127.0.0.1:\(try await server.boundBackendPort())" : "http://127.0.0.1:\(port)"

                let (guardedPorts, guardedBound) = AsyncStream<Int>.makeStream()
                group.addTask {
                    try await guarded.run { port in
                        guardedBound.yield(port)
                        guardedBound.finish()
                    }
                }
                let guardedPort = await guardedPorts.first { _ in true } ?? 0
                guard guardedPort > 0 else { throw HarnessError("the guarded application did not listen") }

                let harness = ServerHarness(
                    kind: kind, clock: clock, server: server, mock: mock, store: store,
                    apiURL: "http://127.0.0.1:\(port)", backendURL: backendURL,
                    guardedURL: "http://127.0.0.1:\(guardedPort)", connection: .live(client),
                    sendsBackendToken: options.sendsBackendToken)
                let result = try await body(harness)
                await stop(client, testStore)
                group.cancelAll()
                return result
            } catch {
                await stop(client, testStore)
                group.cancelAll()
                throw error
            }
        }
    }

    /// Stops the client, drops the PostgreSQL schema and closes the store, before anything is cancelled: a store
    /// closed from a cancelled task cannot close its SQLite connections (SQLiteNIO's thread pool refuses work for
    /// cancelled tasks), so its `run()` must not be what closes it.
    private static func stop(_ client: HTTPClient?, _ testStore: TestStore) async {
        try? await client?.shutdown()
        await testStore.dropSchema?()
        await testStore.store.close()
    }

    /// The `.router` test client of `router`. An application without services and without work before it starts
    /// (the store is prepared by ``run(_:_:_:)``) has nothing that lives beyond `test`, so its client is kept and
    /// used by the test's body (a `.router` test's closure must be `@Sendable`; the body is not).
    /// Requests are logged with `logger`, as the server's application logs them.
    private static func routerClient(
        _ router: Router<ServerRequestContext>, logger: Logger
    ) async throws -> any TestClientProtocol {
        try await Application(router: router, logger: logger).test(.router) { client in client }
    }

    // MARK: HTTP

    /// Sends one request and collects the answer (at most 1 MiB).
    ///
    /// - Parameters:
    ///   - allow5xx: Whether a status of 500 or more is expected; otherwise it is recorded as an issue.
    func send(
        _ method: HTTPMethod, _ path: String, body: [UInt8]? = nil, headers: [(String, String)] = [],
        to target: Target = .api, allow5xx: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HTTPResult {
        var sent: [(String, String)] = []
        if target != .guarded, sendsBackendToken, Self.isBackendRoute(path),
            !headers.contains(where: { $0.0.lowercased() == "authorization" })
        {
            sent.append(("Authorization", "Bearer \(Fixture.backendToken)"))
        }
        if body != nil { sent.append(("Content-Type", "application/json")) }
        sent += headers
        let result: HTTPResult
        switch connection {
        case .live(let client):
            let base: String
            switch target {
            case .api: base = Self.isBackendRoute(path) || Self.isOperatorRoute(path) ? backendURL : apiURL
            case .publicListener: base = apiURL
            case .backendListener: base = backendURL
            case .guarded: base = guardedURL
            }
            var request = HTTPClientRequest(url: base + path)
            request.method = method
            if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
            for (name, value) in sent { request.headers.add(name: name, value: value) }
            let response = try await client.execute(request, timeout: .seconds(60))
            let buffer = try await response.body.collect(upTo: 1 << 20)
            result = HTTPResult(
                status: Int(response.status.code), headers: response.headers, body: Array(buffer.readableBytesView))
        case .router(let api, let guarded):
            // One router serves every route (no second listener through the router).
            let client = target == .guarded ? guarded : api
            var fields = HTTPFields()
            for (name, value) in sent {
                guard let name = HTTPField.Name(name) else { throw HarnessError("not a header name: \(name)") }
                fields.append(HTTPField(name: name, value: value))
            }
            guard let routerMethod = HTTPRequest.Method(method.rawValue) else {
                throw HarnessError("not a method: \(method)")
            }
            let response = try await client.executeRequest(
                uri: path, method: routerMethod, headers: fields, body: body.map { ByteBuffer(bytes: $0) })
            result = HTTPResult(
                status: response.status.code,
                headers: HTTPHeaders(response.headers.map { ($0.name.rawName, $0.value) }),
                body: Array(response.body.readableBytesView))
        }
        if result.status >= 500 && !allow5xx {
            Issue.record("\(method) \(path) answered \(result)", sourceLocation: sourceLocation)
        }
        return result
    }

    /// POSTs `json`.
    func post(
        _ path: String, _ json: JSONValue, headers: [(String, String)] = [], allow5xx: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HTTPResult {
        try await send(
            .POST, path, body: json.bytes, headers: headers, allow5xx: allow5xx, sourceLocation: sourceLocation)
    }

    /// GETs `path`.
    func get(
        _ path: String, headers: [(String, String)] = [], allow5xx: Bool = false,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> HTTPResult {
        try await send(.GET, path, headers: headers, allow5xx: allow5xx, sourceLocation: sourceLocation)
    }

    /// `Authorization: Bearer <admin token>`.
    static var admin: [(String, String)] { [("Authorization", "Bearer \(Fixture.adminToken)")] }
    /// `Authorization: Bearer <backend token>`.
    static var backend: [(String, String)] { [("Authorization", "Bearer \(Fixture.backendToken)")] }

    /// Routes only a backend may call (assertion checks, the decision route, DeviceCheck) and `/metrics` (backend or
    /// operator).
    static func isBackendRoute(_ path: String) -> Bool {
        path.hasPrefix("/v1/assertions/") || path == "/v1/requests/verify" || path.hasPrefix("/v1/devicecheck/")
            || path == "/metrics"
            || path == "/v1/tokens/consume" || path == "/v1/tokens/introspect"
    }

    /// Routes only the operator may call.
    static func isOperatorRoute(_ path: String) -> Bool { path.hasPrefix("/v1/keys/") }

    // MARK: Challenges

    /// A challenge as the API returns it.
    struct Challenge: Sendable {
        let id: String
        let bytes: [UInt8]
        let purpose: String
        let expiresAt: String

        /// SHA-256 of the challenge bytes: the `clientDataHash` of an attestation.
        var clientDataHash: [UInt8] { Array(SHA256.hash(data: bytes)) }
    }

    /// Asks for a challenge (`purpose` and `keyID` left out when `nil`) and requires a 201.
    func challenge(
        purpose: String? = nil, keyID: KeyID? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Challenge {
        var body: JSONValue = .object([])
        if let purpose { body = body.setting("purpose", .string(purpose)) }
        if let keyID { body = body.setting("keyId", .string(keyID.base64)) }
        let answer = try await post("/v1/challenges", body, sourceLocation: sourceLocation)
        try #require(answer.status == 201, "challenge: \(answer)", sourceLocation: sourceLocation)
        let id = try #require(answer.string("challengeId"), sourceLocation: sourceLocation)
        let text = try #require(answer.string("challenge"), sourceLocation: sourceLocation)
        let bytes = try #require(Data(base64Encoded: text), sourceLocation: sourceLocation)
        return Challenge(
            id: id, bytes: Array(bytes), purpose: answer.string("purpose") ?? "",
            expiresAt: answer.string("expiresAt") ?? "")
    }
}

/// A harness that could not start.
struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
