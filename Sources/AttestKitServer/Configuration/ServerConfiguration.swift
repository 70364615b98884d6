public import AttestKit
public import AttestKitFlows
public import AttestKitStore
public import Foundation
public import Logging

/// Everything `attestkit serve` and ``AttestKitServer`` need to know, with the defaults of a local run.
///
/// The decisions' settings (apps, trust anchors, policies, budgets, credentials, enforcement, tokens) are the
/// ``application`` configuration, the one every edge builds its `AttestKitApplication` from; they read and write
/// as members of this value too (`configuration.appIDs`), by dynamic member lookup. Around them are what only the
/// service has: listeners, connection limits, the storage URL, Apple's key, proxies, logs and the dashboard.
///
/// Build one in code, or read one with ``init(reader:)`` from a JSON file, environment variables and command-line
/// flags (swift-configuration). ``validate()`` refuses inconsistent settings before anything listens; in particular
/// a test trust anchor (the software Apple) is refused when production keys are allowed.
@dynamicMemberLookup
public struct ServerConfiguration: Sendable {
    /// Where Apple's web services are, and the key that signs provider tokens. Without it, DeviceCheck and receipt
    /// refresh answer 503 `apple_not_configured`.
    public struct Apple: Sendable {
        /// The `.p8` private key in PEM (PKCS#8). Never logged.
        public var privateKeyPEM: String
        /// The 10-character key id (the JWT `kid`).
        public var keyID: String
        /// The Apple Developer Team ID (the JWT `iss`).
        public var teamID: String
        /// DeviceCheck's environment: Apple's production or development host.
        public var deviceCheckEnvironment: AppAttestEnvironment
        /// Another DeviceCheck base URL (a mock's), instead of Apple's.
        public var deviceCheckBaseURL: String?
        /// Another receipt exchange URL (a mock's), instead of Apple's for the key's environment.
        public var receiptExchangeURL: String?
        /// Seconds one call to Apple may take, retries included.
        public var timeout: TimeInterval

        /// Creates an Apple configuration.
        public init(
            privateKeyPEM: String,
            keyID: String,
            teamID: String,
            deviceCheckEnvironment: AppAttestEnvironment = .production,
            deviceCheckBaseURL: String? = nil,
            receiptExchangeURL: String? = nil,
            timeout: TimeInterval = 15
        ) {
            self.privateKeyPEM = privateKeyPEM
            self.keyID = keyID
            self.teamID = teamID
            self.deviceCheckEnvironment = deviceCheckEnvironment
            self.deviceCheckBaseURL = deviceCheckBaseURL
            self.receiptExchangeURL = receiptExchangeURL
            self.timeout = timeout
        }
    }

    /// What an attested key must satisfy beyond Apple's checks, and when its risk asks for step-up: the flows'
    /// `DeploymentPolicy`.
    public typealias Policy = DeploymentPolicy

    /// Request budgets per minute (`rate-limit.*`): the application's.
    public typealias RateLimits = AttestKitApplication.Configuration.RateLimits

    /// The enforcement of guarded route groups (`enforcement.*`): the application's.
    public typealias EnforcementDefaults = AttestKitApplication.Configuration.EnforcementDefaults

    /// Where failed verifications are recorded (`record.*`): the application's.
    public typealias RecordSettings = AttestKitApplication.Configuration.RecordSettings

    /// An address and port to listen on.
    public struct Listener: Sendable, Hashable {
        /// The address to bind.
        public var host: String
        /// The port to bind; 0 picks a free one.
        public var port: Int

        /// Creates a listener.
        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }
    }

    /// How logs are written.
    public enum LogFormat: String, Sendable, Hashable, CaseIterable {
        /// Text when standard error is a terminal (a person reads it), JSON otherwise (a collector reads it).
        case auto
        /// One JSON object per line.
        case json
        /// swift-log's plain text.
        case text

        /// The format to write in: ``json`` or ``text``, ``auto`` decided by where the logs go.
        ///
        /// - Parameter terminal: Whether standard error is a terminal.
        public func resolved(terminal: Bool) -> LogFormat {
            guard self == .auto else { return self }
            return terminal ? .text : .json
        }
    }

    /// The decisions' settings: what every edge builds its `AttestKitApplication` from.
    public var application: AttestKitApplication.Configuration
    /// The address to bind.
    public var host: String
    /// The port to bind; 0 picks a free one.
    public var port: Int
    /// A second listener for the backend, operator and metrics routes, or `nil` to serve every route on
    /// ``host``:``port``. With one, the public listener serves app routes and probes only.
    public var backendListener: Listener?
    /// The storage URL: `sqlite:PATH`, `postgres://...` or `memory:`.
    public var storageURL: String
    /// The PostgreSQL password (`storage.password`, a secret, or the contents of `storage.password-file`), for a
    /// ``storageURL`` that carries none: the URL may then come from the command line, the password from the
    /// environment, a secrets file or a file of its own. `nil`: the URL's own.
    public var storagePassword: String? = nil
    /// Whether the server applies the missing migrations at start (`storage.migrations=apply`, the default) or
    /// applies none and refuses a schema this release cannot run on (`verify`), migrations being applied apart by
    /// `attestkit migrate` with a role that may change the schema.
    public var storageMigrations: MigrationPolicy = .apply
    /// Apple's web services, or `nil` when no key is configured.
    public var apple: Apple?
    /// Read and idle deadlines of connections, and how many may be open.
    public var connectionLimits: ConnectionLimits
    /// How the server stops: the drain and grace periods (`shutdown.*`).
    public var shutdown = Shutdown()
    /// How long a dashboard session lives, in seconds.
    public var dashboardSessionLifetime: TimeInterval = 3_600
    /// Proxies whose forwarding header (``clientAddressHeader``) names the client's address, for rate limits;
    /// empty (the default) trusts none and uses the TCP peer. A network of every address (`0.0.0.0/0`, `::/0`) is
    /// refused by ``validate()``: every peer trusted, a client would name its own address.
    public var trustedProxies: [IPNetwork]
    /// The forwarding header the trusted proxies write (`http.client-address-header`): `X-Forwarded-For` by
    /// default; the other header is ignored.
    public var clientAddressHeader: ClientAddressHeader = .xForwardedFor
    /// The log level.
    public var logLevel: Logger.Level
    /// The log format; ``LogFormat/auto`` by default.
    public var logFormat: LogFormat

    /// A setting of the ``application`` configuration, read and written as if it were this value's own.
    public subscript<Value>(dynamicMember keyPath: WritableKeyPath<AttestKitApplication.Configuration, Value>) -> Value
    {
        get { application[keyPath: keyPath] }
        set { application[keyPath: keyPath] = newValue }
    }

    /// The defaults of `attestkit serve` with no arguments, for the given apps.
    public init(
        appIDs: [AppID],
        environments: EnvironmentPolicy = .production,
        host: String = "127.0.0.1",
        port: Int = 8080,
        storageURL: String = "sqlite:attestkit-data/attestkit.sqlite",
        apple: Apple? = nil,
        trustAnchors: TrustAnchors,
        challengeTTL: Duration = .seconds(300),
        leeway: TimeInterval = 60,
        timestampWindow: TimeInterval = 300,
        policy: Policy = Policy(),
        rateLimits: RateLimits = RateLimits(),
        bodyLimit: Int = 65_536,
        connectionLimits: ConnectionLimits = ConnectionLimits(),
        deviceCheckStates: DeviceCheckStates? = nil,
        adminToken: String? = nil,
        adminPreviousTokens: [String] = [],
        backendTokens: [String] = [],
        backendListener: Listener? = nil,
        trustedProxies: [IPNetwork] = [],
        logLevel: Logger.Level = .info,
        logFormat: LogFormat = .auto,
        receiptRefreshInterval: Duration = .seconds(60),
        receiptRefreshBatch: Int = 100,
        challengeCleanupInterval: Duration = .seconds(60)
    ) {
        self.application = AttestKitApplication.Configuration(
            appIDs: appIDs, environments: environments, trustAnchors: trustAnchors, challengeTTL: challengeTTL,
            leeway: leeway, timestampWindow: timestampWindow, policy: policy, rateLimits: rateLimits,
            bodyLimit: bodyLimit, deviceCheckStates: deviceCheckStates, adminToken: adminToken,
            adminPreviousTokens: adminPreviousTokens, backendTokens: backendTokens,
            receiptRefreshInterval: receiptRefreshInterval, receiptRefreshBatch: receiptRefreshBatch,
            challengeCleanupInterval: challengeCleanupInterval)
        self.host = host
        self.port = port
        self.storageURL = storageURL
        self.apple = apple
        self.connectionLimits = connectionLimits
        self.backendListener = backendListener
        self.trustedProxies = trustedProxies
        self.logLevel = logLevel
        self.logFormat = logFormat
    }

    /// Refuses settings that cannot work or that would weaken verification.
    /// - Throws: ``ServerConfigurationError`` naming the setting.
    public func validate() throws(ServerConfigurationError) {
        guard (0...65_535).contains(port) else { throw ServerConfigurationError("http.port", "is 0 to 65535") }
        guard !host.isEmpty else { throw ServerConfigurationError("http.host", "is empty") }
        try ClientAddress.checkTrustedProxies(trustedProxies)
        try application.validate()
        try connectionLimits.validate()
        try shutdown.validate()
        if storagePassword != nil { _ = try Self.postgresConfiguration(url: storageURL, password: storagePassword) }
        guard dashboardSessionLifetime >= 60, dashboardSessionLifetime <= 86_400 else {
            throw ServerConfigurationError("dashboard.session-lifetime", "is 60 to 86400 seconds")
        }
        if application.tokensAcceptDeviceTokens, apple == nil {
            throw ServerConfigurationError("tokens.device-tokens", "needs an Apple key (apple.key-file)")
        }
        if let backendListener {
            guard (0...65_535).contains(backendListener.port) else {
                throw ServerConfigurationError("http.backend-port", "is 0 to 65535")
            }
            guard !backendListener.host.isEmpty else { throw ServerConfigurationError("http.backend-host", "is empty") }
            if backendListener.port != 0, backendListener.port == port, backendListener.host == host {
                throw ServerConfigurationError("http.backend-port", "differs from the public listener's port")
            }
        }
        if let apple {
            for appID in application.appIDs where appID.teamID != apple.teamID {
                throw ServerConfigurationError(
                    "apple.team-id",
                    "is \(apple.teamID), but the app \(appID) belongs to team \(appID.teamID): Apple refuses to trade "
                        + "its receipts or answer its DeviceCheck tokens with this key")
            }
            // A millisecond at least: the transport's deadline is in whole milliseconds (less would be none at all).
            guard apple.timeout >= 0.001, apple.timeout <= 600 else {
                throw ServerConfigurationError("apple.timeout", "is 0.001 to 600 seconds")
            }
            // A round starts exchanges until half its lease has passed: one started then must end within the lease,
            // or another replica claims its key and trades it too.
            if application.receiptRefreshLease <= .seconds(2 * apple.timeout) {
                throw ServerConfigurationError(
                    "receipt-refresh.lease",
                    "is more than twice apple.timeout (\(apple.timeout) seconds): an exchange started at half the "
                        + "lease must end before another replica may claim its key")
            }
        }
    }
}

extension ServerConfiguration {
    /// Checks what only a running service refuses: Apple's hosts replaced (`apple.devicecheck-url`,
    /// `apple.receipt-url`, a mock's, for tests) while `environments` allows production keys, as a test trust anchor
    /// is. Whatever answers there decides whether a DeviceCheck token is valid (its answer carries no signature) and
    /// receives the provider token signed with the `.p8` key. The `attestkit devicecheck` and `receipt` commands,
    /// which answer only their operator, may still point at a mock.
    /// - Throws: ``ServerConfigurationError`` naming the setting.
    public func validateAppleHosts() throws(ServerConfigurationError) {
        guard let apple, application.environments.allows(.production) else { return }
        for (key, url) in [
            ("apple.devicecheck-url", apple.deviceCheckBaseURL), ("apple.receipt-url", apple.receiptExchangeURL),
        ]
        where url != nil {
            throw ServerConfigurationError(
                key, "replaces Apple's host (for tests) while production keys are allowed (environments)")
        }
    }
}

/// A setting that cannot be used, and why: the application's `ConfigurationError`.
public typealias ServerConfigurationError = ConfigurationError
