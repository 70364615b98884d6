public import AttestKit
public import AttestKitFlows
import AttestKitStore
public import Foundation
public import Logging

/// Everything `attestkit serve` and ``AttestKitServer`` need to know, with the defaults of a local run.
///
/// Build one in code, or read one with ``init(reader:)`` from a JSON file, environment variables and command-line
/// flags (swift-configuration). ``validate()`` refuses inconsistent settings before anything listens; in particular
/// a test trust anchor (the software Apple) is refused when production keys are allowed.
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

    /// Request budgets per minute. Zero disables a limit.
    public struct RateLimits: Sendable, Hashable {
        /// Attestations per client IP per minute.
        public var attestationsPerIP: Int
        /// Attestations per app (App ID) per minute, against token farming from many addresses.
        public var attestationsPerApp: Int
        /// Challenges per client IP per minute.
        public var challengesPerIP: Int
        /// Dashboard logins (right or wrong) per client IP per minute.
        public var dashboardLoginsPerIP: Int
        /// Wrong credentials per client IP per minute, shared by every credentialed route (backend, operator and
        /// monitoring bearers, dashboard sessions and logins); once spent, that client's credentials are refused
        /// with 429 before they are checked. Right ones spend nothing.
        public var authFailuresPerIP: Int

        /// Creates rate limits.
        public init(
            attestationsPerIP: Int = 30, attestationsPerApp: Int = 6_000, challengesPerIP: Int = 120,
            dashboardLoginsPerIP: Int = 10, authFailuresPerIP: Int = 10
        ) {
            self.attestationsPerIP = attestationsPerIP
            self.attestationsPerApp = attestationsPerApp
            self.challengesPerIP = challengesPerIP
            self.dashboardLoginsPerIP = dashboardLoginsPerIP
            self.authFailuresPerIP = authFailuresPerIP
        }

        /// The `rate-limit.*` settings, from the reader scoped to `rate-limit`, over `defaults`.
        @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
        static func read(_ settings: StrictConfigReader, over defaults: Self) throws(ServerConfigurationError) -> Self {
            var limits = defaults
            if let limit = try settings.int("attestations-per-ip") { limits.attestationsPerIP = limit }
            if let limit = try settings.int("attestations-per-app") { limits.attestationsPerApp = limit }
            if let limit = try settings.int("challenges-per-ip") { limits.challengesPerIP = limit }
            if let limit = try settings.int("dashboard-logins-per-ip") { limits.dashboardLoginsPerIP = limit }
            if let limit = try settings.int("auth-failures-per-ip") { limits.authFailuresPerIP = limit }
            return limits
        }
    }

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

    /// The address to bind.
    public var host: String
    /// The port to bind; 0 picks a free one.
    public var port: Int
    /// A second listener for the backend, operator and metrics routes, or `nil` to serve every route on
    /// ``host``:``port``. With one, the public listener serves app routes and probes only.
    public var backendListener: Listener?
    /// The apps whose keys are accepted (team id + bundle id). With none, the service starts but answers
    /// attestations with 503 `apps_not_configured`.
    public var appIDs: [AppID]
    /// The App Attest environments accepted.
    public var environments: EnvironmentPolicy
    /// The storage URL: `sqlite:PATH`, `postgres://...` or `memory:`.
    public var storageURL: String
    /// The PostgreSQL password (`storage.password`, a secret), for a ``storageURL`` that carries none: the URL may
    /// then come from the command line, the password from the environment or a secrets file. `nil`: the URL's own.
    public var storagePassword: String? = nil
    /// Apple's web services, or `nil` when no key is configured.
    public var apple: Apple?
    /// The roots attestations and receipts must chain to: Apple's unless testing.
    public var trustAnchors: TrustAnchors
    /// How long a challenge lives.
    public var challengeTTL: Duration
    /// Seconds of clock skew tolerated on certificate and receipt times.
    public var leeway: TimeInterval
    /// How far (seconds) a `timestamp:` freshness may be from the server's clock, either way.
    public var timestampWindow: TimeInterval
    /// The attestation policy.
    public var policy: Policy
    /// Rate limits.
    public var rateLimits: RateLimits
    /// The largest request body accepted, in bytes.
    public var bodyLimit: Int
    /// Read and idle deadlines of connections, and how many may be open.
    public var connectionLimits: ConnectionLimits
    /// Names for the four DeviceCheck bit states, or `nil` to speak in bits only.
    public var deviceCheckStates: DeviceCheckStates?
    /// The bearer token of the operator endpoints, or `nil` to disable them (503 `admin_not_configured`). It opens no
    /// backend route.
    public var adminToken: String?
    /// The bearer tokens of the backend routes (assertion checks, DeviceCheck), several at once for rotation; empty
    /// disables those routes (503 `backend_not_configured`). Each at least 16 characters.
    public var backendTokens: [String]
    /// Debug tokens (Simulator and CI builds) that guarded routes accept instead of an assertion, at the lowest trust
    /// level; each at least 32 characters. Refused (the server does not start) while production keys are allowed.
    public var debugTokens: [String] = []
    /// The policy of ``AttestKitServer/routeGuard(group:policy:)`` unless a group overrides it: mode, rollout, least trust.
    public var enforcement: EnforcementDefaults = EnforcementDefaults()
    /// How long a dashboard session lives, in seconds.
    public var dashboardSessionLifetime: TimeInterval = 3_600
    /// How many DeviceCheck answers of the fallback are cached, and for how long (seconds).
    public var deviceTokenCache: (capacity: Int, ttl: TimeInterval) = (10_000, 600)
    /// How many DeviceCheck validations of the fallback a client (an address) may start a minute; 0: no limit.
    public var deviceTokenValidationsPerClient: Int = DeviceTokenValidator.defaultValidationsPerClient

    /// The enforcement of guarded route groups unless a group says otherwise.
    public struct EnforcementDefaults: Sendable, Hashable {
        /// `enforce`, `report` or `off`.
        public var mode: EnforcementMode
        /// The share of devices enforced in `enforce` mode, 0 to 1.
        public var rollout: Double
        /// Mixed into the rollout hash.
        public var rolloutSalt: String
        /// The least trust level accepted.
        public var minimumTrust: TrustLevel
        /// Whether a request that names no rollout subject is enforced below a rollout of 1
        /// (`EnforcementPolicy.enforcesWithoutSubject`).
        public var enforcesWithoutSubject: Bool

        /// Enforced for everyone, App Attest only.
        public init(
            mode: EnforcementMode = .enforce, rollout: Double = 1, rolloutSalt: String = "",
            minimumTrust: TrustLevel = .appAttest, enforcesWithoutSubject: Bool = true
        ) {
            self.mode = mode
            self.rollout = rollout
            self.rolloutSalt = rolloutSalt
            self.minimumTrust = minimumTrust
            self.enforcesWithoutSubject = enforcesWithoutSubject
        }

        /// The `enforcement.*` settings, from the reader scoped to `enforcement`, over `defaults`.
        @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
        static func read(_ settings: StrictConfigReader, over defaults: Self) throws(ServerConfigurationError) -> Self {
            var enforcement = defaults
            if let mode = try settings.choice("mode", as: EnforcementMode.self) { enforcement.mode = mode }
            if let rollout = try settings.double("rollout") { enforcement.rollout = rollout }
            if let salt = try settings.string("rollout-salt") { enforcement.rolloutSalt = salt }
            if let trust = try settings.choice("minimum-trust", as: TrustLevel.self) {
                enforcement.minimumTrust = trust
            }
            if let choice = try settings.choice("without-subject", as: SubjectlessEnforcement.self) {
                enforcement.enforcesWithoutSubject = choice == .enforce
            }
            return enforcement
        }

        /// The values of `enforcement.without-subject`.
        private enum SubjectlessEnforcement: String, CaseIterable {
            case enforce
            case report
        }
    }

    /// Proxies whose forwarding header (``clientAddressHeader``) names the client's address, for rate limits;
    /// empty (the default) trusts none and uses the TCP peer.
    public var trustedProxies: [IPNetwork]
    /// The forwarding header the trusted proxies write (`http.client-address-header`): `X-Forwarded-For` by
    /// default; the other header is ignored.
    public var clientAddressHeader: ClientAddressHeader = .xForwardedFor
    /// The log level.
    public var logLevel: Logger.Level
    /// The log format; ``LogFormat/auto`` by default.
    public var logFormat: LogFormat
    /// How often the receipt refresher looks for due keys.
    public var receiptRefreshInterval: Duration
    /// How many due keys one refresh round handles at most.
    public var receiptRefreshBatch: Int
    /// How often expired challenges are deleted.
    public var challengeCleanupInterval: Duration
    /// Session tokens (`tokens.*`), or `nil`: the token routes answer 503 `tokens_not_configured`.
    public var tokens: TokenService.Configuration? = nil
    /// Whether `POST /v1/tokens` sells a session token at trust `devicecheck` for a DeviceCheck token
    /// (`tokens.device-tokens`: `refuse`, the default, or `accept`); needs ``tokens`` and ``apple``. Off by default:
    /// a backend that does not read `trust` would take such a token for an App Attest proof.
    public var tokensAcceptDeviceTokens = false
    /// Where failed verifications are recorded (`record.*`), or `nil`: not recorded.
    public var record: RecordSettings? = nil
    /// The CA that certifies attested app keys (`key-attestation.*`), or `nil`: key attestations are answered
    /// without a certificate.
    public var keyAttestationAuthority: AppKeyAuthority? = nil

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
        backendTokens: [String] = [],
        backendListener: Listener? = nil,
        trustedProxies: [IPNetwork] = [],
        logLevel: Logger.Level = .info,
        logFormat: LogFormat = .auto,
        receiptRefreshInterval: Duration = .seconds(60),
        receiptRefreshBatch: Int = 100,
        challengeCleanupInterval: Duration = .seconds(60)
    ) {
        self.host = host
        self.port = port
        self.appIDs = appIDs
        self.environments = environments
        self.storageURL = storageURL
        self.apple = apple
        self.trustAnchors = trustAnchors
        self.challengeTTL = challengeTTL
        self.leeway = leeway
        self.timestampWindow = timestampWindow
        self.policy = policy
        self.rateLimits = rateLimits
        self.bodyLimit = bodyLimit
        self.connectionLimits = connectionLimits
        self.deviceCheckStates = deviceCheckStates
        self.adminToken = adminToken
        self.backendTokens = backendTokens
        self.backendListener = backendListener
        self.trustedProxies = trustedProxies
        self.logLevel = logLevel
        self.logFormat = logFormat
        self.receiptRefreshInterval = receiptRefreshInterval
        self.receiptRefreshBatch = receiptRefreshBatch
        self.challengeCleanupInterval = challengeCleanupInterval
    }

    /// Refuses settings that cannot work or that would weaken verification.
    /// - Throws: ``ServerConfigurationError`` naming the setting.
    public func validate() throws(ServerConfigurationError) {
        guard (0...65_535).contains(port) else { throw ServerConfigurationError("http.port", "is 0 to 65535") }
        guard !host.isEmpty else { throw ServerConfigurationError("http.host", "is empty") }
        if environments.allows(.production) && !trustAnchors.isApple {
            throw ServerConfigurationError(
                "environments",
                "a test trust anchor (software Apple) is configured while production keys are allowed; "
                    + "production must trust Apple's roots only")
        }
        guard challengeTTL >= .seconds(1), challengeTTL <= .seconds(86_400) else {
            throw ServerConfigurationError("challenge.ttl", "is between 1 second and one day")
        }
        guard leeway >= 0, leeway <= 3_600 else { throw ServerConfigurationError("leeway", "is 0 to 3600 seconds") }
        guard timestampWindow >= 1, timestampWindow <= 86_400 else {
            throw ServerConfigurationError("assertion.timestamp-window", "is 1 to 86400 seconds")
        }
        guard bodyLimit >= 1_024, bodyLimit <= 16 * 1_048_576 else {
            throw ServerConfigurationError("http.body-limit", "is 1 KiB to 16 MiB")
        }
        try connectionLimits.validate()
        for (name, value) in [
            ("rate-limit.attestations-per-ip", rateLimits.attestationsPerIP),
            ("rate-limit.attestations-per-app", rateLimits.attestationsPerApp),
            ("rate-limit.challenges-per-ip", rateLimits.challengesPerIP),
            ("rate-limit.dashboard-logins-per-ip", rateLimits.dashboardLoginsPerIP),
            ("rate-limit.auth-failures-per-ip", rateLimits.authFailuresPerIP),
        ] where value < 0 || value > 1_000_000 {
            throw ServerConfigurationError(name, "is 0 (off) to 1000000")
        }
        if let storagePassword {
            guard let url = try? StoreURL(storageURL), let postgres = url.postgres else {
                throw ServerConfigurationError("storage.password", "is for a PostgreSQL storage.url (postgres://)")
            }
            guard postgres.password == nil else {
                throw ServerConfigurationError(
                    "storage.password", "is given, and storage.url carries a password too: give the URL without it")
            }
            guard !storagePassword.isEmpty else { throw ServerConfigurationError("storage.password", "is empty") }
        }
        if let adminToken, adminToken.utf8.count < 16 {
            throw ServerConfigurationError("admin.token", "is at least 16 characters")
        }
        for token in backendTokens {
            guard token.utf8.count >= 16 else {
                throw ServerConfigurationError("backend.tokens", "holds tokens of at least 16 characters each")
            }
            guard token != adminToken else {
                throw ServerConfigurationError("backend.tokens", "must differ from the admin token (another scope)")
            }
        }
        do {
            _ = try DebugTokens(debugTokens, environments: environments)
        } catch {
            throw ServerConfigurationError("debug.tokens", error.reason)
        }
        guard dashboardSessionLifetime >= 60, dashboardSessionLifetime <= 86_400 else {
            throw ServerConfigurationError("dashboard.session-lifetime", "is 60 to 86400 seconds")
        }
        guard enforcement.rollout.isFinite, (0...1).contains(enforcement.rollout) else {
            throw ServerConfigurationError("enforcement.rollout", "is a fraction from 0 to 1")
        }
        guard deviceTokenCache.capacity >= 1, deviceTokenCache.capacity <= 1_000_000, deviceTokenCache.ttl >= 0,
            deviceTokenCache.ttl <= 86_400
        else {
            throw ServerConfigurationError("devicecheck.cache-size", "is 1 to 1000000 answers kept 0 to 86400 seconds")
        }
        if tokensAcceptDeviceTokens {
            guard tokens != nil else {
                throw ServerConfigurationError("tokens.device-tokens", "needs tokens.signing-key-file")
            }
            guard apple != nil else {
                throw ServerConfigurationError("tokens.device-tokens", "needs an Apple key (apple.key-file)")
            }
        }
        guard (0...1_000_000).contains(deviceTokenValidationsPerClient) else {
            throw ServerConfigurationError("devicecheck.validations-per-client", "is 0 (no limit) to 1000000 a minute")
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
            for appID in appIDs where appID.teamID != apple.teamID {
                throw ServerConfigurationError(
                    "apple.team-id",
                    "is \(apple.teamID), but the app \(appID) belongs to team \(appID.teamID): Apple refuses to trade "
                        + "its receipts or answer its DeviceCheck tokens with this key")
            }
        }
        if let minimum = policy.minimumOSVersion, OSVersion(minimum) == nil {
            throw ServerConfigurationError("policy.minimum-os-version", "is a dotted version such as 17.4")
        }
        if let threshold = policy.riskMetricThreshold, threshold < 0 {
            throw ServerConfigurationError("policy.risk-metric-threshold", "is 0 or more")
        }
        guard receiptRefreshInterval >= .milliseconds(10), challengeCleanupInterval >= .milliseconds(10) else {
            throw ServerConfigurationError("intervals", "are at least 10 ms")
        }
        guard (1...10_000).contains(receiptRefreshBatch) else {
            throw ServerConfigurationError("receipt-refresh.batch", "is 1 to 10000")
        }
        if let apple, apple.timeout <= 0 || apple.timeout > 600 {
            throw ServerConfigurationError("apple.timeout", "is between 0 and 600 seconds")
        }
    }
}

/// A setting that cannot be used, and why.
public struct ServerConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The configuration key (`http.port`, `apps`, ...).
    public let key: String
    /// What is wrong.
    public let reason: String

    /// Creates an error.
    public init(_ key: String, _ reason: String) {
        self.key = key
        self.reason = reason
    }

    /// `key: reason`.
    public var description: String { "\(key): \(reason)" }
}
