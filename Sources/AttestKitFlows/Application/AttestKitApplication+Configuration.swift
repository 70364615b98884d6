public import AttestKit
public import Foundation

extension AttestKitApplication {
    /// What the decisions need to know, whatever edge serves them: the apps and environments accepted, the trust
    /// anchors, the clock skew tolerated, the deployment's policies, the budgets, the credentials of the backend and
    /// the operator, enforcement, tokens, key attestation and recording.
    ///
    /// `attestkit serve` reads one from its settings (the service's `ServerConfiguration` holds it, with the HTTP
    /// listeners and the storage URL around it); a Vapor or Hummingbird application builds one in code. Every
    /// setting names its configuration key in its documentation, the key ``validate()`` names when it refuses it.
    public struct Configuration: Sendable {
        /// The apps whose keys are accepted (`apps`: team id + bundle id). With none, attestations are refused with
        /// 503 `apps_not_configured`.
        public var appIDs: [AppID]
        /// The App Attest environments accepted (`environments`).
        public var environments: EnvironmentPolicy
        /// The roots attestations and receipts must chain to: Apple's unless testing.
        public var trustAnchors: TrustAnchors
        /// How long a challenge lives (`challenge.ttl`).
        public var challengeTTL: Duration
        /// Seconds of clock skew tolerated on certificate and receipt times (`leeway`).
        public var leeway: TimeInterval
        /// How far (seconds) a `timestamp:` freshness may be from the clock, either way
        /// (`assertion.timestamp-window`).
        public var timestampWindow: TimeInterval
        /// What an attested key must satisfy beyond Apple's checks, and when its risk asks for step-up (`policy.*`).
        public var policy: DeploymentPolicy
        /// Request budgets (`rate-limit.*`).
        public var rateLimits: RateLimits
        /// The largest request body accepted, in bytes (`http.body-limit`): what a route decodes and what a guard
        /// hashes.
        public var bodyLimit: Int
        /// Names for the four DeviceCheck bit states (`devicecheck.states`), or `nil` to speak in bits only.
        public var deviceCheckStates: DeviceCheckStates?
        /// The bearer token of the operator routes (`admin.token`), or `nil` to disable them (503
        /// `admin_not_configured`). It opens no backend route. At least 16 bytes of UTF-8 (16 ASCII characters).
        public var adminToken: String?
        /// Admin tokens still accepted beside ``adminToken`` while a rotation reaches every replica and client
        /// (`admin.previous-tokens`): wherever the admin token opens a route (operator routes, the dashboard and its
        /// login, `/metrics`), each of these does too. Each at least 16 bytes of UTF-8, none equal to ``adminToken`` or
        /// to a backend token, and they need ``adminToken``. A dashboard session is bound to the token that opened it
        /// (``adminToken`` or one of these): removing that token ends it.
        public var adminPreviousTokens: [String]
        /// The bearer tokens of the backend routes (`backend.tokens`), several at once for rotation; empty disables
        /// those routes (503 `backend_not_configured`). Each at least 16 bytes of UTF-8 (16 ASCII characters).
        public var backendTokens: [String]
        /// Debug tokens (Simulator and CI builds) that guarded routes accept instead of an assertion, at the lowest
        /// trust level (`debug.tokens`); each 32 to 256 bytes of UTF-8, none a backend or admin token (one ships in
        /// test builds). Refused while production keys are allowed.
        public var debugTokens: [String]
        /// The enforcement of the `default` route group, and of every other group unless it says otherwise
        /// (`enforcement.*`).
        public var enforcement: EnforcementDefaults
        /// Named route groups with their own enforcement (`enforcement.groups`), beside `default`.
        public var enforcementGroups: [String: EnforcementDefaults]
        /// How many DeviceCheck answers of the fallback are cached, and for how long in seconds
        /// (`devicecheck.cache-size`, `devicecheck.cache-ttl`).
        public var deviceTokenCache: (capacity: Int, ttl: TimeInterval)
        /// How many DeviceCheck validations of the fallback a client (an address) may start a minute; 0: no limit
        /// (`devicecheck.validations-per-client`).
        public var deviceTokenValidationsPerClient: Int
        /// Session tokens (`tokens.*`), or `nil`: the token routes answer 503 `tokens_not_configured`.
        public var tokens: TokenService.Configuration?
        /// Whether `POST /v1/tokens` sells a session token at trust `devicecheck` for a DeviceCheck token
        /// (`tokens.device-tokens`); needs ``tokens`` and Apple's clients. Off by default: a backend that does not
        /// read `trust` would take such a token for an App Attest proof.
        public var tokensAcceptDeviceTokens: Bool
        /// Where failed verifications are recorded (`record.*`), or `nil`: not recorded.
        public var record: RecordSettings?
        /// The CA that certifies attested app keys (`key-attestation.*`), or `nil`: key attestations are answered
        /// without a certificate.
        public var keyAttestationAuthority: AppKeyAuthority?
        /// How often the receipt refresher looks for due keys (`receipt-refresh.interval`).
        public var receiptRefreshInterval: Duration
        /// How many due keys one refresh round handles at most (`receipt-refresh.batch`).
        public var receiptRefreshBatch: Int
        /// How long a key claimed by a refresh round is kept from other replicas (`receipt-refresh.lease`): the
        /// keys of a replica that stops mid-round are due again after it. Longer than a round takes.
        public var receiptRefreshLease: Duration = .seconds(300)
        /// How recently a key must have been used (asserted, or registered) for the receipt refresh to trade its
        /// receipt with Apple, in seconds (`receipt-refresh.active-within`, 30 days by default): the keys of
        /// installs gone quiet cost no Apple call. 60 seconds to 10 years.
        public var receiptRefreshActiveWithin: TimeInterval = 30 * 86_400
        /// How long a key may go unused (no assertion since its last one, or its registration) before its
        /// assertions are refused with `key_expired` (the app attests a new key), in seconds (`keys.expire-after`);
        /// `nil`, the default: keys never expire. 1 second to 10 years.
        public var keyExpiry: TimeInterval? = nil
        /// How many receipt exchanges a replica has in flight at once (`receipt-refresh.concurrency`): 1 to 64.
        public var receiptRefreshConcurrency: Int = 8
        /// The ceiling on receipt exchanges a second across every replica sharing the store
        /// (`receipt-refresh.max-per-second`, kept in the store): 0 (none) to 100000.
        public var receiptRefreshMaxPerSecond: Int = 50
        /// The largest difference tolerated between this replica's clock and its store's, in seconds
        /// (`storage.max-clock-skew`, 60 by default; ``ClockSkewCheck``): over it, `/ready` answers 503 `clock_skew`
        /// and the background jobs pause. `nil`: the difference is measured and reported, never refused. Only a store
        /// with a clock of its own (PostgreSQL) is measured. 1 to 86400 seconds.
        public var maxClockSkew: TimeInterval? = 60
        /// How often expired challenges are deleted (`challenge-cleanup.interval`).
        public var challengeCleanupInterval: Duration
        /// Whether this replica runs the background jobs (`background.jobs`: `run`, the default, or `off`): the
        /// receipt refresh and the cleanups. Off, ``AttestKitApplication/backgroundServices`` is empty, and the
        /// replica serves requests only: run the jobs on fewer replicas than serve (one, say), so that Apple is not
        /// asked for the same receipt by every replica.
        public var runsBackgroundJobs: Bool
        /// The attestation ramp (`ramp.*`): the share of installs per app admitted to attest, and a ceiling of new
        /// attestations per app per UTC day; off by default.
        public var ramp = AttestationRamp()

        /// An adopter's own attestation rules (a Swift edge's: the Vapor integration, an application of its own),
        /// checked right after Apple's checks and before ``policy``'s; `nil`: none. A refusal carries its own code
        /// (HTTP 403).
        public var attestationPolicy: (any AttestationPolicy)? = nil

        /// A configuration with the defaults of `attestkit serve`, for the given apps.
        public init(
            appIDs: [AppID], environments: EnvironmentPolicy = .production, trustAnchors: TrustAnchors,
            challengeTTL: Duration = .seconds(300), leeway: TimeInterval = 60, timestampWindow: TimeInterval = 300,
            policy: DeploymentPolicy = DeploymentPolicy(), rateLimits: RateLimits = RateLimits(),
            bodyLimit: Int = 65_536, deviceCheckStates: DeviceCheckStates? = nil, adminToken: String? = nil,
            adminPreviousTokens: [String] = [], backendTokens: [String] = [], debugTokens: [String] = [],
            enforcement: EnforcementDefaults = EnforcementDefaults(),
            enforcementGroups: [String: EnforcementDefaults] = [:],
            receiptRefreshInterval: Duration = .seconds(60), receiptRefreshBatch: Int = 100,
            challengeCleanupInterval: Duration = .seconds(60)
        ) {
            self.appIDs = appIDs
            self.environments = environments
            self.trustAnchors = trustAnchors
            self.challengeTTL = challengeTTL
            self.leeway = leeway
            self.timestampWindow = timestampWindow
            self.policy = policy
            self.rateLimits = rateLimits
            self.bodyLimit = bodyLimit
            self.deviceCheckStates = deviceCheckStates
            self.adminToken = adminToken
            self.adminPreviousTokens = adminPreviousTokens
            self.backendTokens = backendTokens
            self.debugTokens = debugTokens
            self.enforcement = enforcement
            self.enforcementGroups = enforcementGroups
            self.deviceTokenCache = (10_000, 600)
            self.deviceTokenValidationsPerClient = DeviceTokenValidator.defaultValidationsPerClient
            self.tokens = nil
            self.tokensAcceptDeviceTokens = false
            self.record = nil
            self.keyAttestationAuthority = nil
            self.receiptRefreshInterval = receiptRefreshInterval
            self.receiptRefreshBatch = receiptRefreshBatch
            self.challengeCleanupInterval = challengeCleanupInterval
            self.runsBackgroundJobs = true
        }

        /// Refuses previous admin tokens without an admin token, shorter than 16 bytes of UTF-8, or equal to the admin
        /// token or to a backend token (another scope).
        private func validateAdminPreviousTokens() throws(ConfigurationError) {
            guard !adminPreviousTokens.isEmpty else { return }
            guard let adminToken else {
                throw ConfigurationError(
                    "admin.previous-tokens", "needs admin.token (the current admin token) beside the previous ones")
            }
            for token in adminPreviousTokens {
                guard token.utf8.count >= 16 else {
                    throw ConfigurationError(
                        "admin.previous-tokens", "holds tokens of at least 16 bytes (UTF-8; ASCII characters) each")
                }
                guard token != adminToken else {
                    throw ConfigurationError(
                        "admin.previous-tokens", "must differ from admin.token (the current token goes there only)")
                }
                guard !backendTokens.contains(token) else {
                    throw ConfigurationError(
                        "admin.previous-tokens", "must differ from the backend tokens (another scope)")
                }
            }
        }

        /// The longest ``receiptRefreshActiveWithin`` and ``keyExpiry``: ten years, in seconds.
        static let longestKeyPeriod: TimeInterval = 10 * 366 * 86_400

        /// Refuses settings that cannot work or that would weaken verification.
        /// - Throws: ``ConfigurationError`` naming the setting.
        public func validate() throws(ConfigurationError) {
            if environments.allows(.production) && !trustAnchors.isApple {
                throw ConfigurationError(
                    "environments",
                    "a test trust anchor (software Apple) is configured while production keys are allowed; "
                        + "production must trust Apple's roots only")
            }
            guard challengeTTL >= .seconds(1), challengeTTL <= .seconds(86_400) else {
                throw ConfigurationError("challenge.ttl", "is between 1 second and one day")
            }
            guard leeway >= 0, leeway <= 3_600 else { throw ConfigurationError("leeway", "is 0 to 3600 seconds") }
            guard timestampWindow >= 1, timestampWindow <= 86_400 else {
                throw ConfigurationError("assertion.timestamp-window", "is 1 to 86400 seconds")
            }
            guard bodyLimit >= 1_024, bodyLimit <= 16 * 1_048_576 else {
                throw ConfigurationError("http.body-limit", "is 1 KiB to 16 MiB")
            }
            try rateLimits.validate()
            try ramp.validate()
            // A macOS App ID outside `apps` never matches an attested key: its policy would silently never apply.
            if let stranger = policy.macOSAppIDs.first(where: { !appIDs.contains($0) }) {
                throw ConfigurationError(
                    "policy.macos-app-ids",
                    "holds '\(stranger)', which is not one of apps: the macOS key policy would never apply to it")
            }
            if let adminToken, adminToken.utf8.count < 16 {
                throw ConfigurationError("admin.token", "is at least 16 bytes (UTF-8; ASCII characters)")
            }
            try validateAdminPreviousTokens()
            for token in backendTokens {
                guard token.utf8.count >= 16 else {
                    throw ConfigurationError(
                        "backend.tokens", "holds tokens of at least 16 bytes (UTF-8; ASCII characters) each")
                }
                guard token != adminToken else {
                    throw ConfigurationError("backend.tokens", "must differ from the admin token (another scope)")
                }
            }
            do {
                _ = try DebugTokens(debugTokens, environments: environments)
            } catch {
                throw ConfigurationError("debug.tokens", error.reason)
            }
            // A debug token ships inside test builds of the app: it must not also be a credential of a backend or
            // of the operator.
            let credentials = Set(backendTokens + adminPreviousTokens + (adminToken.map { [$0] } ?? []))
            if debugTokens.contains(where: credentials.contains) {
                throw ConfigurationError(
                    "debug.tokens", "must differ from the backend and admin tokens (a debug token ships in test builds)"
                )
            }
            try enforcement.validate(key: "enforcement")
            for (name, group) in enforcementGroups.sorted(by: { $0.key < $1.key }) {
                try group.validate(key: "enforcement.groups")
                do {
                    _ = try EnforcementPolicy(group: name, mode: group.mode)
                } catch {
                    throw ConfigurationError("enforcement.groups", "names '\(name)': \(error.reason)")
                }
            }
            guard (1...1_000_000).contains(deviceTokenCache.capacity) else {
                throw ConfigurationError("devicecheck.cache-size", "is 1 to 1000000 answers")
            }
            guard deviceTokenCache.ttl >= 0, deviceTokenCache.ttl <= 86_400 else {
                throw ConfigurationError("devicecheck.cache-ttl", "is 0 to 86400 seconds")
            }
            if tokensAcceptDeviceTokens, tokens == nil {
                throw ConfigurationError("tokens.device-tokens", "needs tokens.signing-key-file")
            }
            guard (0...1_000_000).contains(deviceTokenValidationsPerClient) else {
                throw ConfigurationError("devicecheck.validations-per-client", "is 0 (no limit) to 1000000 a minute")
            }
            try policy.validateMinimumVersions()
            if let threshold = policy.riskMetricThreshold, threshold < 0 {
                throw ConfigurationError("policy.risk-metric-threshold", "is 0 or more")
            }
            // Past a day a cleanup that never comes again and receipts left to go stale are mistakes, not settings.
            guard (Duration.milliseconds(10)...Duration.seconds(86_400)).contains(receiptRefreshInterval) else {
                throw ConfigurationError("receipt-refresh.interval", "is 10 ms to 86400 seconds")
            }
            guard (Duration.milliseconds(10)...Duration.seconds(86_400)).contains(challengeCleanupInterval) else {
                throw ConfigurationError("challenge-cleanup.interval", "is 10 ms to 86400 seconds")
            }
            guard (1...10_000).contains(receiptRefreshBatch) else {
                throw ConfigurationError("receipt-refresh.batch", "is 1 to 10000")
            }
            guard receiptRefreshLease >= .seconds(1), receiptRefreshLease <= .seconds(86_400) else {
                throw ConfigurationError("receipt-refresh.lease", "is 1 to 86400 seconds")
            }
            guard (60...Self.longestKeyPeriod).contains(receiptRefreshActiveWithin) else {
                throw ConfigurationError("receipt-refresh.active-within", "is 60 seconds to 10 years")
            }
            if let keyExpiry, !(1...Self.longestKeyPeriod).contains(keyExpiry) {
                throw ConfigurationError("keys.expire-after", "is 0 (off) or 1 second to 10 years")
            }
            guard (1...64).contains(receiptRefreshConcurrency) else {
                throw ConfigurationError("receipt-refresh.concurrency", "is 1 to 64")
            }
            if let maxClockSkew, !(1...86_400).contains(maxClockSkew) {
                throw ConfigurationError(
                    "storage.max-clock-skew", "is 1 to 86400 seconds, or off (0 in the configuration, nil in code)")
            }
            guard (0...100_000).contains(receiptRefreshMaxPerSecond) else {
                throw ConfigurationError("receipt-refresh.max-per-second", "is 0 (no ceiling) to 100000")
            }
        }
    }
}

extension AttestKitApplication.Configuration {
    /// Request budgets per minute. Zero disables a limit.
    public struct RateLimits: Sendable, Hashable {
        /// Attestations per client address per minute.
        public var attestationsPerIP: Int
        /// Attestations per app (App ID) per minute, against token farming from many addresses; kept in the store,
        /// so replicas share it.
        public var attestationsPerApp: Int
        /// Challenges per client address per minute.
        public var challengesPerIP: Int
        /// Dashboard logins (right or wrong) per client address per minute.
        public var dashboardLoginsPerIP: Int
        /// Wrong credentials per client address per minute, shared by every credentialed route (backend, operator
        /// and monitoring bearers, dashboard sessions and logins); once spent, that client's credentials are refused
        /// with 429 before they are checked. Right ones spend nothing.
        public var authFailuresPerIP: Int
        /// The prefix length, 32 to 64, an IPv6 client is counted by in every per-address budget: 64 (a /64, the
        /// smallest prefix a subscriber is given) by default; 56 or 48 where subscribers hold a /56 or a /48, so
        /// that one cannot multiply its budgets by the /64s it owns. An IPv4 client is counted by its address.
        public var ipv6PrefixLength: Int

        /// Creates rate limits.
        public init(
            attestationsPerIP: Int = 30, attestationsPerApp: Int = 6_000, challengesPerIP: Int = 120,
            dashboardLoginsPerIP: Int = 10, authFailuresPerIP: Int = 10, ipv6PrefixLength: Int = 64
        ) {
            self.attestationsPerIP = attestationsPerIP
            self.attestationsPerApp = attestationsPerApp
            self.challengesPerIP = challengesPerIP
            self.dashboardLoginsPerIP = dashboardLoginsPerIP
            self.authFailuresPerIP = authFailuresPerIP
            self.ipv6PrefixLength = ipv6PrefixLength
        }

        /// Refuses a budget outside 0 (off) to 1,000,000 a minute and an IPv6 prefix length outside 32 to 64.
        /// - Throws: ``ConfigurationError`` naming the `rate-limit.*` key.
        public func validate() throws(ConfigurationError) {
            for (name, value) in [
                ("rate-limit.attestations-per-ip", attestationsPerIP),
                ("rate-limit.attestations-per-app", attestationsPerApp),
                ("rate-limit.challenges-per-ip", challengesPerIP),
                ("rate-limit.dashboard-logins-per-ip", dashboardLoginsPerIP),
                ("rate-limit.auth-failures-per-ip", authFailuresPerIP),
            ] where value < 0 || value > 1_000_000 {
                throw ConfigurationError(name, "is 0 (off) to 1000000")
            }
            guard (32...64).contains(ipv6PrefixLength) else {
                throw ConfigurationError("rate-limit.ipv6-prefix-length", "is 32 to 64")
            }
        }
    }

    /// The enforcement of a guarded route group: mode, rollout, least trust.
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
        /// (``EnforcementPolicy/enforcesWithoutSubject``).
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

        /// The policy of the route group `group` under these settings.
        /// - Throws: ``FlowError`` for a group name that is not a closed label.
        public func policy(group: String) throws(FlowError) -> EnforcementPolicy {
            try EnforcementPolicy(
                group: group, mode: mode, rollout: try Rollout(fraction: rollout, salt: rolloutSalt),
                minimumTrust: minimumTrust, enforcesWithoutSubject: enforcesWithoutSubject)
        }

        /// Refuses a rollout outside 0 to 1.
        func validate(key: String) throws(ConfigurationError) {
            guard rollout.isFinite, (0...1).contains(rollout) else {
                throw ConfigurationError(
                    key == "enforcement" ? "enforcement.rollout" : key, "is a fraction from 0 to 1")
            }
        }
    }

    /// Where failed verifications are recorded (`record.*`), for `attestkit replay`.
    public struct RecordSettings: Sendable, Hashable {
        /// The directory bundles are written to (created with mode 0700 if missing).
        public var directory: String
        /// At most this many bundles of known keys are kept, oldest removed first.
        public var maximumBundles: Int
        /// At most this many bytes of bundles of known keys are kept, oldest removed first.
        public var maximumBytes: Int
        /// At most this many bundles of one known key are kept: past that, the key's own oldest is removed, so one key
        /// cannot flush the others' evidence (``VerificationRecorder/maximumPerKey``); at most ``maximumBundles`` (a
        /// larger value means ``maximumBundles``).
        public var maximumBundlesPerKey: Int
        /// At most this many bundles of unknown keys and malformed input are kept (0: none recorded), oldest removed
        /// first; they never remove a known key's bundle (``VerificationRecorder/Quota``).
        public var unknownMaximumBundles: Int
        /// At most this many bytes of bundles of unknown keys and malformed input are kept.
        public var unknownMaximumBytes: Int

        /// Creates settings; 1,000 bundles and 100 MiB of known keys (10 bundles of one key), 100 bundles and 10 MiB
        /// of the rest by default.
        public init(
            directory: String, maximumBundles: Int = 1_000, maximumBytes: Int = 100 << 20,
            maximumBundlesPerKey: Int = 10, unknownMaximumBundles: Int = 100, unknownMaximumBytes: Int = 10 << 20
        ) {
            self.directory = directory
            self.maximumBundles = maximumBundles
            self.maximumBytes = maximumBytes
            self.maximumBundlesPerKey = maximumBundlesPerKey
            self.unknownMaximumBundles = unknownMaximumBundles
            self.unknownMaximumBytes = unknownMaximumBytes
        }
    }
}
