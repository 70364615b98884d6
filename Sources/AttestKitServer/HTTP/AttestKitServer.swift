import AsyncHTTPClient
import AttestKit
import AttestKitApple
public import AttestKitFlows
import AttestKitShutdown
public import AttestKitStore
public import Foundation
public import Hummingbird
public import Logging
import NIOCore
public import ServiceLifecycle

/// The AttestKit HTTP service (`attestkit serve`): challenges, attestations, assertion checks, DeviceCheck bits
/// and key administration over JSON, with receipt refresh and challenge cleanup running beside it.
///
/// A `Service`: run it in a `ServiceGroup` (or call ``run()`` under one) and it shuts down gracefully: the HTTP
/// server stops accepting, in-flight requests finish, the background services stop, the store closes. Run its
/// ``drain`` after it in the same group to drain first (`/ready` answering 503 `draining` while requests are still
/// served), and bound the shutdown with the group's `maximumGracefulShutdownDuration`:
///
/// ```swift
/// let server = try AttestKitServer(configuration: configuration, logger: logger)
/// var group = ServiceGroupConfiguration(
///     services: [server, server.drain], gracefulShutdownSignals: [.sigterm], logger: logger)
/// group.maximumGracefulShutdownDuration = configuration.shutdown.gracePeriod
/// try await ServiceGroup(configuration: group).run()
/// ```
public final class AttestKitServer: Service, Sendable {
    /// The configuration in use (validated).
    public let configuration: ServerConfiguration
    /// The state, shared with ``AttestKitMiddleware`` users through ``gate``.
    public let store: any AttestationStore
    /// The assertion gate of this server, to guard routes of the same process.
    public let gate: AssertionGate
    /// The metrics `/metrics` exposes.
    public let metrics: ServerMetrics
    /// Receipt exchange rounds, when an Apple key is configured.
    public let receiptRefresh: ReceiptRefreshService?
    /// Expired challenge cleanup.
    public let challengeCleanup: ChallengeCleanupService
    /// The DeviceCheck fallback of guarded routes, when an Apple key is configured.
    public var deviceTokens: DeviceTokenValidator? { application.deviceTokens }
    /// The decisions composed once: what every route and ``routeGuard(group:policy:)`` use.
    public let application: AttestKitApplication
    /// The drain before shutdown (``ServerConfiguration/Shutdown``): run it after the server in the same
    /// `ServiceGroup`, so that it gets the graceful shutdown first.
    public let drain: DrainService
    let api: AttestKitAPI
    /// Settled once the store is prepared: the background services wait for it.
    let preparation = StorePreparation()
    private let logger: Logger
    private let ownsStore: Bool
    private let httpClient: HTTPClient
    private let port = PortPromise()
    private let backendPort = PortPromise()
    private let connections: ConnectionPolicy

    /// Every route, `METHOD /path`, as registered (what the OpenAPI document must list).
    public static var routes: [String] { AttestKitAPI.routes }

    /// Creates a server.
    ///
    /// - Parameters:
    ///   - configuration: Validated here.
    ///   - store: A store to use, run and close by the caller; `nil` opens ``ServerConfiguration/storageURL``,
    ///     which the server then runs, prepares and closes itself.
    ///   - logger: The service's logger.
    ///   - now: The clock of every verification, challenge and refresh (inject one in tests).
    /// - Throws: ``ServerConfigurationError`` (also for an `http.max-connections` not below the descriptor limit,
    ///   whose soft value is raised to the hard one here), or a `StoreError` for an unusable storage URL.
    public init(
        configuration: ServerConfiguration,
        store: (any AttestationStore)? = nil,
        logger: Logger = Logger(label: "attestkit.server"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        try configuration.validate()
        try configuration.validateAppleHosts()
        let metrics = ServerMetrics()
        metrics.trustAnchors(configuration.trustAnchors)
        self.connections = try ConnectionPolicy(
            configuration.connectionLimits, descriptors: DescriptorLimit.raised(), metrics: metrics, logger: logger)
        self.configuration = configuration
        self.logger = logger
        self.ownsStore = store == nil
        let store =
            try store
            ?? configuration.makeStore(migrations: configuration.storageMigrations, logger: logger)
        self.store = store
        var httpConfiguration = HTTPClient.Configuration()
        httpConfiguration.connectionPool.retryConnectionEstablishment = false
        httpConfiguration.redirectConfiguration = .disallow
        // HTTP/1 (a mock, a proxy): room for every receipt exchange a refresh round has in flight at once.
        httpConfiguration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = max(
            8, configuration.receiptRefreshConcurrency)
        let httpClient = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        self.httpClient = httpClient
        self.metrics = metrics
        let apple: AppleClients?
        do {
            apple = try configuration.apple.map {
                try AppleClients(
                    $0, receiptAnchor: configuration.trustAnchors.receipt, leeway: configuration.leeway,
                    httpClient: httpClient, now: now)
            }
        } catch {
            try? httpClient.syncShutdown()
            throw ServerConfigurationError("apple", "the Apple key cannot be used: \(error)")
        }
        let application: AttestKitApplication
        do {
            application = try AttestKitApplication(
                configuration: configuration.application, store: store, apple: apple, metrics: metrics.flows,
                logger: logger, now: now)
        } catch {
            try? httpClient.syncShutdown()
            throw error
        }
        self.application = application
        self.drain = DrainService(
            application: application, drainPeriod: configuration.shutdown.drainPeriod, logger: logger)
        self.gate = application.gate
        self.api = AttestKitAPI(application: application, configuration: configuration, metrics: metrics)
        self.receiptRefresh = application.receiptRefresh
        self.challengeCleanup = application.challengeCleanup
    }

    /// A server that never ran still owns its HTTP client, which must be shut down before it is released
    /// (AsyncHTTPClient traps in debug builds, and leaks otherwise). Non-blocking; after ``run()`` it is a no-op.
    deinit {
        httpClient.shutdown { _ in }
    }

    /// Serves until graceful shutdown or cancellation. Cancellation stops it as a graceful shutdown does, bounded: the
    /// listener closes first, and requests in flight get a second to finish before they are cancelled.
    public func run() async throws {
        announce()
        var services = backgroundServices
        let publicListener: AttestKitAPI.Listener
        if let backend = configuration.backendListener {
            publicListener = .public
            services.append(
                application(
                    for: .backend, host: backend.host, port: backend.port, services: [], promise: backendPort))
        } else {
            publicListener = .only
            backendPort.settle(.failure(ServerConfigurationError("http.backend-port", "no backend listener")))
        }
        let application = application(
            for: publicListener, host: configuration.host, port: configuration.port, services: services,
            promise: port)
        do {
            try await GracefulCancellation.run(application, logger: logger)
        } catch {
            port.settle(.failure(error))
            backendPort.settle(.failure(error))
            await shutdown()
            throw error
        }
        port.settle(.failure(CancellationError()))
        backendPort.settle(.failure(CancellationError()))
        await shutdown()
        logger.info("attestkit serve stopped: the listener is closed, requests answered, background services stopped")
    }

    /// The guard of a route group of this process, for ``AttestKitMiddleware/init(guard:bodyLimit:subject:client:)``
    /// (``middleware(group:policy:bodyLimit:subject:)`` builds the middleware with this server's `http.body-limit` and
    /// client naming behind `http.trusted-proxies`, which that initializer does not know of): this
    /// server's gate, debug tokens, DeviceCheck fallback, risk policy and metrics, under `policy`, or else under the
    /// configured enforcement of the group `group`: `default` (`enforcement.*`) or one of `enforcement.groups`.
    /// - Throws: ``ServerConfigurationError`` for a group that is not configured, as Vapor's middleware and the
    ///   decision route answer `group_unknown` for it: a misspelt name must stop the setup, not guard its routes
    ///   under other settings than the operator wrote.
    public func routeGuard(group: String = "default", policy: EnforcementPolicy? = nil) throws -> RouteGuard {
        if let policy { return application.routeGuard(policy: policy) }
        do throws(FlowError) {
            return try application.routeGuard(group: group)
        } catch {
            throw ServerConfigurationError(
                "enforcement.groups",
                "names no group '\(group)' (configured: \(application.groupNames.joined(separator: ", "))); add it "
                    + "there, or pass the route's policy")
        }
    }

    /// The API's routes, to mount on an application's own router (``AttestKitController``).
    public var controller: AttestKitController { AttestKitController(api: api) }

    /// The router of the only listener (no `http.backend-port`): every route behind the request middleware (the
    /// JSON error envelope, request metrics and logs). What ``buildApplication()`` serves; tests drive it with
    /// HummingbirdTesting's `.router` framework, without a socket.
    public func buildRouter() -> Router<ServerRequestContext> { router(for: .only) }

    /// The Hummingbird application of the only listener (no `http.backend-port`) on ``ServerConfiguration/host``
    /// and ``ServerConfiguration/port``, with the store prepared before it listens and the background services
    /// (and the store, when the server opened it) run beside it: what ``run()`` runs without a backend listener.
    /// Keep the server while the application runs: it owns the HTTP client of Apple's services, shut down when the
    /// server is released. ``run()`` also closes the store and that client at the end; prefer it unless the
    /// application is to be composed with others.
    public func buildApplication() -> some ApplicationProtocol {
        application(
            for: .only, host: configuration.host, port: configuration.port, services: backgroundServices,
            promise: port)
    }

    /// The background services (the application's: none where `background.jobs` is `off`), each started once the
    /// store is prepared (``StorePreparation``), and the store when the server opened it.
    var backgroundServices: [any Service] {
        var services: [any Service] = application.backgroundServices.map {
            AfterStorePreparation(service: $0, preparation: preparation)
        }
        if ownsStore { services.insert(store, at: 0) }
        return services
    }

    /// The router of one listener: the routes it serves behind the request middleware.
    private func router(for listener: AttestKitAPI.Listener) -> Router<ServerRequestContext> {
        let router = Router(context: ServerRequestContext.self)
        router.add(middleware: RequestMetricsMiddleware(metrics: metrics, routes: AttestKitAPI.routes(on: listener)))
        api.register(on: router, for: listener)
        return router
    }

    /// The Hummingbird application of one listener: its router, the connection deadlines and the connection maximum
    /// (shared by every listener), the store prepared before it listens, and `services` run beside it.
    private func application(
        for listener: AttestKitAPI.Listener, host: String, port: Int, services: [any Service], promise: PortPromise
    ) -> some ApplicationProtocol {
        var application = Application(
            router: router(for: listener),
            server: connections.http1(),
            configuration: .init(address: .hostname(host, port: port), serverName: "AttestKit"),
            services: services,
            onServerRunning: { channel in promise.settle(.success(channel.localAddress?.port ?? 0)) },
            logger: logger)
        let (store, preparation) = (self.store, self.preparation)
        application.beforeServerStarts { [logger, migrations = configuration.storageMigrations] in
            try await store.prepare()
            preparation.settle()
            if let version = await store.schemaVersion {
                logger.info(
                    "storage ready",
                    metadata: [
                        "schema": "\(version.current)", "found": "\(version.found)", "known": "\(version.known)",
                        "migrations": "\(migrations)",
                    ])
            }
        }
        return application
    }

    /// The bound port, once listening (useful with port 0).
    /// - Throws: the error that stopped the server from listening.
    public func boundPort() async throws -> Int { try await port.value() }

    /// The bound port of the backend listener (``ServerConfiguration/backendListener``), once listening.
    /// - Throws: the error that stopped it from listening, or ``ServerConfigurationError`` without one.
    public func boundBackendPort() async throws -> Int { try await backendPort.value() }

    private func shutdown() async {
        await application.settleRecording()
        if ownsStore { await store.close() }
        try? await httpClient.shutdown()
    }

    private func announce() {
        for notice in configuration.startNotices { logger.log(level: notice.level, "\(notice.message)") }
        logger.info(
            "attestkit serve starting",
            metadata: [
                "host": "\(configuration.host)", "port": "\(configuration.port)",
                "backend": "\(configuration.backendListener.map { "\($0.host):\($0.port)" } ?? "same listener")",
                "apps": "\(configuration.appIDs.map(\.description).joined(separator: ","))",
                "environments": "\(configuration.environments)",
                "storage": "\((try? StoreURL(configuration.storageURL))?.description ?? "invalid")",
            ])
        if let postgres = (store as? PostgresAttestationStore)?.configuration, ownsStore {
            ServerConfiguration.announce(postgres, logger: logger)
        }
        logger.info(
            "connection limits",
            metadata: [
                "descriptors": "\(connections.descriptors?.description ?? "unknown")",
                "max_connections": "\(connections.maxConnections)",
                "read_timeout": "\(configuration.connectionLimits.readTimeout)",
                "idle_timeout": "\(configuration.connectionLimits.idleTimeout)",
            ])
    }
}
