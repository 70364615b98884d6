import AttestKit
import AttestKitApple
public import AttestKitFlows
import AttestKitStore
public import Configuration
import Foundation
import Logging

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension ServerConfiguration {
    /// Reads a configuration from swift-configuration, then ``validate()``s it.
    ///
    /// Keys are dotted; in a JSON file they are nested objects (`{"http": {"port": 8081}}`). The environment
    /// variable of a key is `ATTESTKIT_` followed by the key upper-cased, with `.` and `-` turned into `_`. A list
    /// is a JSON array, or a comma-separated string in the environment and on the command line. Durations are in
    /// seconds and may have a fraction. ``ServerConfigurationSource`` builds the usual reader: command-line flags
    /// over the environment over a JSON file over these defaults. This table is written from `ServerSetting.all`,
    /// the one table of settings, and a test holds the two equal.
    ///
    /// | Key | Environment variable | Default |
    /// |-----|----------------------|---------|
    /// | `http.host` | `ATTESTKIT_HTTP_HOST` | `127.0.0.1` |
    /// | `http.port` | `ATTESTKIT_HTTP_PORT` | `8080` (0 picks a free port) |
    /// | `http.body-limit` | `ATTESTKIT_HTTP_BODY_LIMIT` | `65536` bytes |
    /// | `http.backend-host` | `ATTESTKIT_HTTP_BACKEND_HOST` | `http.host`, when `http.backend-port` is set |
    /// | `http.backend-port` | `ATTESTKIT_HTTP_BACKEND_PORT` | none: backend, operator and metrics routes on the one listener |
    /// | `http.trusted-proxies` | `ATTESTKIT_HTTP_TRUSTED_PROXIES` | none: CIDR list whose forwarding header is believed |
    /// | `http.client-address-header` | `ATTESTKIT_HTTP_CLIENT_ADDRESS_HEADER` | `x-forwarded-for` (or `forwarded`): the one header the proxies write |
    /// | `http.read-timeout` | `ATTESTKIT_HTTP_READ_TIMEOUT` | `10` seconds to send a whole request |
    /// | `http.idle-timeout` | `ATTESTKIT_HTTP_IDLE_TIMEOUT` | `30` seconds between requests on a kept-alive connection |
    /// | `http.max-connections` | `ATTESTKIT_HTTP_MAX_CONNECTIONS` | the descriptor limit minus a reserve (see ``DescriptorLimit``) |
    /// | `shutdown.drain-period` | `ATTESTKIT_SHUTDOWN_DRAIN_PERIOD` | `5` seconds of draining after SIGTERM: `/ready` answers 503 `draining`, requests still served (0 to 3600) |
    /// | `shutdown.grace-period` | `ATTESTKIT_SHUTDOWN_GRACE_PERIOD` | `30` seconds at most for the whole shutdown, drain included (at least a second more than the drain period) |
    /// | `apps` | `ATTESTKIT_APPS` | none: `TEAMID.bundle.id` list; without one, attestations get 503 |
    /// | `environments` | `ATTESTKIT_ENVIRONMENTS` | `production` (or `development`, `both`) |
    /// | `storage.url` (secret) | `ATTESTKIT_STORAGE_URL` | `sqlite:attestkit-data/attestkit.sqlite`; on the command line only without a password |
    /// | `storage.password` (secret) | `ATTESTKIT_STORAGE_PASSWORD` | none: the PostgreSQL password, for a `storage.url` without one |
    /// | `storage.password-file` | `ATTESTKIT_STORAGE_PASSWORD_FILE` | none: a file holding the PostgreSQL password (one trailing newline dropped), instead of `storage.password` |
    /// | `apple.key-file` | `ATTESTKIT_APPLE_KEY_FILE` | none: path of the `.p8` key |
    /// | `apple.key-id` | `ATTESTKIT_APPLE_KEY_ID` | none |
    /// | `apple.team-id` | `ATTESTKIT_APPLE_TEAM_ID` | none |
    /// | `apple.devicecheck-environment` | `ATTESTKIT_APPLE_DEVICECHECK_ENVIRONMENT` | `production` |
    /// | `apple.devicecheck-url` | `ATTESTKIT_APPLE_DEVICECHECK_URL` | Apple's, for the environment; another (a mock, for tests) refused by serve while production keys are allowed |
    /// | `apple.receipt-url` | `ATTESTKIT_APPLE_RECEIPT_URL` | Apple's, for the key's environment; another refused by serve while production keys are allowed |
    /// | `apple.timeout` | `ATTESTKIT_APPLE_TIMEOUT` | `15` seconds (0.001 to 600) |
    /// | `trust.attestation-root` | `ATTESTKIT_TRUST_ATTESTATION_ROOT` | Apple's root; a PEM path, for tests |
    /// | `trust.receipt-root` | `ATTESTKIT_TRUST_RECEIPT_ROOT` | Apple's root; a PEM path, for tests |
    /// | `challenge.ttl` | `ATTESTKIT_CHALLENGE_TTL` | `300` seconds |
    /// | `leeway` | `ATTESTKIT_LEEWAY` | `60` seconds |
    /// | `assertion.timestamp-window` | `ATTESTKIT_ASSERTION_TIMESTAMP_WINDOW` | `300` seconds |
    /// | `policy.validation-categories` | `ATTESTKIT_POLICY_VALIDATION_CATEGORIES` | any: names (`app-store`, `testflight`, `development`, `enterprise`, …) or numbers, and `unreported` |
    /// | `policy.minimum-os-version` | `ATTESTKIT_POLICY_MINIMUM_OS_VERSION` | any: dotted, such as `17.4` |
    /// | `policy.macos-app-ids` | `ATTESTKIT_POLICY_MACOS_APP_IDS` | none: App IDs of macOS apps, whose keys must carry Apple's macOS access policy; an empty list is refused (leave it out) |
    /// | `policy.minimum-bundle-version` | `ATTESTKIT_POLICY_MINIMUM_BUNDLE_VERSION` | any: dot-separated integers, such as `2.10.1` |
    /// | `policy.validation-category-change` | `ATTESTKIT_POLICY_VALIDATION_CATEGORY_CHANGE` | `refuse` (or `step-up`: accepted, asking for step-up; or `allow`: an assertion may report another category than its key's attestation) |
    /// | `policy.risk-metric-threshold` | `ATTESTKIT_POLICY_RISK_METRIC_THRESHOLD` | none |
    /// | `policy.unknown-risk` | `ATTESTKIT_POLICY_UNKNOWN_RISK` | `allow` (or `step-up`: step-up until Apple rated the key) |
    /// | `rate-limit.attestations-per-ip` | `ATTESTKIT_RATE_LIMIT_ATTESTATIONS_PER_IP` | `30` a minute (0: off) |
    /// | `rate-limit.attestations-per-app` | `ATTESTKIT_RATE_LIMIT_ATTESTATIONS_PER_APP` | `6000` a minute (0: off) |
    /// | `rate-limit.challenges-per-ip` | `ATTESTKIT_RATE_LIMIT_CHALLENGES_PER_IP` | `120` a minute (0: off) |
    /// | `ramp.share` | `ATTESTKIT_RAMP_SHARE` | `100`: the percentage (0 to 100, decimals allowed) of each app's installs admitted to attest; below 100, an attest challenge needs the key id (attestation ramp) |
    /// | `ramp.daily-ceiling` | `ATTESTKIT_RAMP_DAILY_CEILING` | `0`: none; new attestations per app per UTC day across every replica sharing the store (up to 1000000) |
    /// | `ramp.recheck-after` | `ATTESTKIT_RAMP_RECHECK_AFTER` | `21600` seconds an install outside the share is told to wait (`Retry-After`, 1 to 604800) |
    /// | `devicecheck.states` | `ATTESTKIT_DEVICECHECK_STATES` | none: `trial-and-ban`, or four names for bit0 bit1 = 00, 10, 01, 11 |
    /// | `rate-limit.dashboard-logins-per-ip` | `ATTESTKIT_RATE_LIMIT_DASHBOARD_LOGINS_PER_IP` | `10` a minute (0: off) |
    /// | `rate-limit.auth-failures-per-ip` | `ATTESTKIT_RATE_LIMIT_AUTH_FAILURES_PER_IP` | `10` wrong credentials a minute, every credentialed route (0: off) |
    /// | `rate-limit.ipv6-prefix-length` | `ATTESTKIT_RATE_LIMIT_IPV6_PREFIX_LENGTH` | `64`: an IPv6 client counts by its /64 in every per-address budget (32 to 64; 56 or 48 where subscribers hold a /56 or /48) |
    /// | `dashboard.session-lifetime` | `ATTESTKIT_DASHBOARD_SESSION_LIFETIME` | `3600` seconds (60 to 86400) |
    /// | `debug.tokens` (secret) | `ATTESTKIT_DEBUG_TOKENS` | none: comma-separated, each 32 to 256 bytes (ASCII characters), none a backend or admin token; refused while production keys are allowed |
    /// | `enforcement.mode` | `ATTESTKIT_ENFORCEMENT_MODE` | `enforce` (or `report`, `off`) for guarded route groups |
    /// | `enforcement.rollout` | `ATTESTKIT_ENFORCEMENT_ROLLOUT` | `1`: the share of devices enforced, 0 to 1 |
    /// | `enforcement.rollout-salt` | `ATTESTKIT_ENFORCEMENT_ROLLOUT_SALT` | empty: mixed into the rollout hash |
    /// | `enforcement.minimum-trust` | `ATTESTKIT_ENFORCEMENT_MINIMUM_TRUST` | `app_attest` (or `devicecheck`, `debug`) |
    /// | `enforcement.without-subject` | `ATTESTKIT_ENFORCEMENT_WITHOUT_SUBJECT` | `enforce` (or `report`): requests naming no rollout subject below a rollout of 1 |
    /// | `enforcement.groups` | `ATTESTKIT_ENFORCEMENT_GROUPS` | none: named route groups, each `NAME:MODE[:ROLLOUT[:MINIMUM-TRUST]]` |
    /// | `devicecheck.cache-size` | `ATTESTKIT_DEVICECHECK_CACHE_SIZE` | `10000` DeviceCheck answers of the fallback |
    /// | `devicecheck.cache-ttl` | `ATTESTKIT_DEVICECHECK_CACHE_TTL` | `600` seconds |
    /// | `devicecheck.validations-per-client` | `ATTESTKIT_DEVICECHECK_VALIDATIONS_PER_CLIENT` | `30` DeviceCheck validations of the fallback a minute per client address (0: off) |
    /// | `admin.token` (secret) | `ATTESTKIT_ADMIN_TOKEN` | none: admin endpoints off; at least 16 bytes (ASCII characters) |
    /// | `admin.previous-tokens` (secret) | `ATTESTKIT_ADMIN_PREVIOUS_TOKENS` | none: admin tokens still accepted during a rotation, beside `admin.token` (which they need); comma-separated, each at least 16 bytes (ASCII characters) |
    /// | `backend.tokens` (secret) | `ATTESTKIT_BACKEND_TOKENS` | none: backend routes off; comma-separated, each at least 16 bytes (ASCII characters) |
    /// | `log.level` | `ATTESTKIT_LOG_LEVEL` | `info` (`trace` … `critical`) |
    /// | `log.format` | `ATTESTKIT_LOG_FORMAT` | `auto`: text on a terminal, JSON otherwise (or `json`, `text`) |
    /// | `receipt-refresh.interval` | `ATTESTKIT_RECEIPT_REFRESH_INTERVAL` | `60` seconds (0.01 to 86400) |
    /// | `receipt-refresh.batch` | `ATTESTKIT_RECEIPT_REFRESH_BATCH` | `100` keys |
    /// | `receipt-refresh.lease` | `ATTESTKIT_RECEIPT_REFRESH_LEASE` | `300` seconds a claimed key is kept from other replicas (1 to 86400, more than twice `apple.timeout`) |
    /// | `receipt-refresh.active-within` | `ATTESTKIT_RECEIPT_REFRESH_ACTIVE_WITHIN` | `2592000` seconds (30 days): only keys used within it have their receipts traded (60 to 10 years) |
    /// | `keys.expire-after` | `ATTESTKIT_KEYS_EXPIRE_AFTER` | `0`: off; a key unused for longer (seconds) is refused with `key_expired` (1 to 10 years) |
    /// | `receipt-refresh.concurrency` | `ATTESTKIT_RECEIPT_REFRESH_CONCURRENCY` | `8` receipt exchanges in flight at once per replica (1 to 64) |
    /// | `receipt-refresh.max-per-second` | `ATTESTKIT_RECEIPT_REFRESH_MAX_PER_SECOND` | `50` receipt exchanges a second across every replica sharing the store (0: no ceiling; up to 100000) |
    /// | `challenge-cleanup.interval` | `ATTESTKIT_CHALLENGE_CLEANUP_INTERVAL` | `60` seconds (0.01 to 86400) |
    /// | `background.jobs` | `ATTESTKIT_BACKGROUND_JOBS` | `run` (or `off`: this replica runs no receipt refresh and no cleanup) |
    /// | `storage.max-clock-skew` | `ATTESTKIT_STORAGE_MAX_CLOCK_SKEW` | `60` seconds off PostgreSQL's clock: `/ready` 503 `clock_skew`, jobs paused; `0`: measured only (1 to 86400) |
    /// | `storage.migrations` | `ATTESTKIT_STORAGE_MIGRATIONS` | `apply` the missing migrations at start (or `verify`: apply none, refuse a schema this release cannot run on) |
    /// | `tokens.signing-key-file` | `ATTESTKIT_TOKENS_SIGNING_KEY_FILE` | none: token routes answer 503; a PEM P-256 private key |
    /// | `tokens.previous-key-files` | `ATTESTKIT_TOKENS_PREVIOUS_KEY_FILES` | none: PEM keys still accepted and published after a rotation |
    /// | `tokens.issuer` | `ATTESTKIT_TOKENS_ISSUER` | `attestkit` (`iss`) |
    /// | `tokens.audience` | `ATTESTKIT_TOKENS_AUDIENCE` | `attestkit` (`aud`) |
    /// | `tokens.ttl` | `ATTESTKIT_TOKENS_TTL` | `900` seconds (300 to 604800) |
    /// | `tokens.device-tokens` | `ATTESTKIT_TOKENS_DEVICE_TOKENS` | `refuse` (or `accept`: `POST /v1/tokens` sells a token at trust `devicecheck` for a DeviceCheck token, used up) |
    /// | `record.directory` | `ATTESTKIT_RECORD_DIRECTORY` | none: failed verifications are not recorded |
    /// | `record.max-bundles` | `ATTESTKIT_RECORD_MAX_BUNDLES` | `1000` bundles of known keys, oldest removed first |
    /// | `record.max-bytes` | `ATTESTKIT_RECORD_MAX_BYTES` | `104857600` bytes (100 MiB) of known keys' bundles |
    /// | `record.max-bundles-per-key` | `ATTESTKIT_RECORD_MAX_BUNDLES_PER_KEY` | `10` bundles of one known key, its own oldest removed first (at most `record.max-bundles`) |
    /// | `record.unknown-max-bundles` | `ATTESTKIT_RECORD_UNKNOWN_MAX_BUNDLES` | `100` bundles of unknown keys and malformed input (0: none) |
    /// | `record.unknown-max-bytes` | `ATTESTKIT_RECORD_UNKNOWN_MAX_BYTES` | `10485760` bytes (10 MiB) of those bundles |
    /// | `key-attestation.ca-certificate-file` | `ATTESTKIT_KEY_ATTESTATION_CA_CERTIFICATE_FILE` | none: no app key certificates; a PEM CA certificate |
    /// | `key-attestation.ca-key-file` | `ATTESTKIT_KEY_ATTESTATION_CA_KEY_FILE` | none; the CA certificate's PEM private key |
    /// | `key-attestation.certificate-validity` | `ATTESTKIT_KEY_ATTESTATION_CERTIFICATE_VALIDITY` | `3600` seconds (300 to 2592000) |
    ///
    /// `apple.key-file`, `apple.key-id` and `apple.team-id` come together or not at all; without them, DeviceCheck
    /// and receipt refresh are off, and the other `apple.*` settings are refused. `trust.attestation-root` and
    /// `trust.receipt-root` also come together, and are refused while `environments` allows production. Secret
    /// values are read as secrets, so swift-configuration's access logs redact them; the contents of the key file
    /// never pass through swift-configuration.
    ///
    /// - Throws: ``ServerConfigurationError`` naming the key, for a value of the wrong type or one that cannot be
    ///   parsed (never replaced by its default), a file that cannot be read, an incomplete key or root pair, or
    ///   settings ``validate()`` refuses.
    public init(reader: ConfigReader) throws(ServerConfigurationError) {
        try self.init(settings: StrictConfigReader(reader: reader))
    }

    /// Reads a configuration through `settings` (see ``init(reader:)``), then ``validate()``s it.
    init(settings: StrictConfigReader) throws(ServerConfigurationError) {
        self.init(
            appIDs: try settings.values("apps", as: AppID.self) ?? [], trustAnchors: try Self.trustAnchors(settings))
        let http = settings.scoped(to: "http")
        if let host = try http.string("host") { self.host = host }
        if let port = try http.int("port") { self.port = port }
        if let bodyLimit = try http.int("body-limit") { self.bodyLimit = bodyLimit }
        self.backendListener = try Self.backendListener(http, publicHost: host)
        self.trustedProxies = try http.values("trusted-proxies", as: IPNetwork.self) ?? []
        if let header = try http.choice("client-address-header", as: ClientAddressHeader.self) {
            self.clientAddressHeader = header
        }
        self.connectionLimits = try ConnectionLimits.read(http)
        self.shutdown = try Shutdown.read(settings.scoped(to: "shutdown"))
        if let environments = try settings.value("environments", as: EnvironmentPolicy.self) {
            self.environments = environments
        }
        let storage = settings.scoped(to: "storage")
        if let storageURL = try Self.storageURL(storage) { self.storageURL = storageURL }
        self.storagePassword = try Self.storagePassword(storage)
        self.apple = try Self.apple(settings.scoped(to: "apple"))
        if let ttl = try Self.duration(settings, "challenge.ttl") { self.challengeTTL = ttl }
        if let leeway = try settings.double("leeway") { self.leeway = leeway }
        if let window = try settings.double("assertion.timestamp-window") { self.timestampWindow = window }
        self.policy = try Self.policy(settings.scoped(to: "policy"))
        self.rateLimits = try RateLimits.read(settings.scoped(to: "rate-limit"), over: self.rateLimits)
        let ramp = settings.scoped(to: "ramp")
        if let share = try ramp.double("share") { self.ramp.share = share }
        if let ceiling = try ramp.int("daily-ceiling") { self.ramp.dailyCeiling = ceiling }
        if let recheck = try ramp.int("recheck-after") { self.ramp.recheckAfter = recheck }
        if let lifetime = try settings.double("dashboard.session-lifetime") { dashboardSessionLifetime = lifetime }
        self.debugTokens = try settings.strings("debug.tokens") ?? []
        let enforcementSettings = settings.scoped(to: "enforcement")
        self.enforcement = try EnforcementDefaults.read(enforcementSettings, over: self.enforcement)
        self.enforcementGroups = try EnforcementDefaults.groups(enforcementSettings, over: self.enforcement)
        let deviceCheck = settings.scoped(to: "devicecheck")
        if let names = try deviceCheck.strings("states") {
            if names.count == 1, let preset = DeviceCheckStates.presets[names[0]] {
                self.deviceCheckStates = preset
            } else {
                self.deviceCheckStates = try DeviceCheckStates(names)
            }
        }
        if let size = try deviceCheck.int("cache-size") { self.deviceTokenCache.capacity = size }
        if let ttl = try deviceCheck.double("cache-ttl") { self.deviceTokenCache.ttl = ttl }
        if let limit = try deviceCheck.int("validations-per-client") { self.deviceTokenValidationsPerClient = limit }
        self.adminToken = try settings.string("admin.token")
        self.adminPreviousTokens = try settings.strings("admin.previous-tokens") ?? []
        self.backendTokens = try settings.strings("backend.tokens") ?? []
        let log = settings.scoped(to: "log")
        if let level = try log.choice("level", as: Logger.Level.self) { self.logLevel = level }
        if let format = try log.choice("format", as: LogFormat.self) { self.logFormat = format }
        if let interval = try Self.duration(settings, "receipt-refresh.interval") {
            self.receiptRefreshInterval = interval
        }
        if let batch = try settings.int("receipt-refresh.batch") { self.receiptRefreshBatch = batch }
        if let lease = try Self.duration(settings, "receipt-refresh.lease") { self.receiptRefreshLease = lease }
        if let within = try settings.double("receipt-refresh.active-within") {
            self.receiptRefreshActiveWithin = within
        }
        if let expiry = try settings.double("keys.expire-after") { self.keyExpiry = expiry == 0 ? nil : expiry }
        if let concurrency = try settings.int("receipt-refresh.concurrency") {
            self.receiptRefreshConcurrency = concurrency
        }
        if let ceiling = try settings.int("receipt-refresh.max-per-second") {
            self.receiptRefreshMaxPerSecond = ceiling
        }
        if let jobs = try settings.choice("background.jobs", as: BackgroundJobs.self) {
            self.runsBackgroundJobs = jobs == .run
        }
        if let skew = try storage.double("max-clock-skew") { self.maxClockSkew = skew == 0 ? nil : skew }
        if let migrations = try storage.choice("migrations", as: StorageMigrations.self) {
            self.storageMigrations = migrations == .apply ? .apply : .verify
        }
        if let interval = try Self.duration(settings, "challenge-cleanup.interval") {
            self.challengeCleanupInterval = interval
        }
        let tokens = settings.scoped(to: "tokens")
        self.tokens = try Self.tokens(tokens)
        if let choice = try tokens.choice("device-tokens", as: DeviceTokenSale.self) {
            self.tokensAcceptDeviceTokens = choice == .accept
        }
        self.record = try Self.record(settings.scoped(to: "record"))
        self.keyAttestationAuthority = try Self.keyAttestationAuthority(settings.scoped(to: "key-attestation"))
        try validate()
    }

    /// Every key ``init(reader:)`` reads, in the order of its table: the keys of ``ServerSetting/all``.
    static let configurationKeys: [String] = ServerSetting.all.map(\.key)

    /// The keys whose values are secrets in every layer: those ``ServerSetting/all`` marks secret.
    ///
    /// None of them is taken from the command line (``ServerConfigurationSource/commandLineRefusal(key:value:)``),
    /// where every user of the machine can read it, except `storage.url` without a password.
    static let secretKeys: Set<String> = ServerSetting.secretKeys

    /// The largest `.p8` or PEM root file read.
    private static let pemFileLimit = 64 * 1_024

    /// `storage.url`, from the reader scoped to `storage`, checked by `StoreURL` (whose errors never repeat the
    /// password), its `sslrootcert` file read.
    private static func storageURL(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> String? {
        guard let url = try settings.string("url") else { return nil }
        do {
            try StoreURL(url).postgres?.checkTLS()
        } catch {
            throw ServerConfigurationError(settings.key("url"), "is not a usable storage URL: \(error.reason)")
        }
        return url
    }

    /// The `apple.*` settings, from the reader scoped to `apple`: `nil` without a key, an error for a partial key.
    private static func apple(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> Apple? {
        let keyFile = try settings.string("key-file")
        let keyID = try settings.string("key-id")
        let teamID = try settings.string("team-id")
        let environment = try settings.choice("devicecheck-environment", as: AppAttestEnvironment.self)
        let deviceCheckURL = try settings.value("devicecheck-url", as: WebURL.self)?.text
        let receiptURL = try settings.value("receipt-url", as: WebURL.self)?.text
        let timeout = try settings.double("timeout")
        guard let keyFile, let keyID, let teamID else {
            let given = [
                (settings.key("key-file"), keyFile), (settings.key("key-id"), keyID), (settings.key("team-id"), teamID),
            ]
            if let missing = given.first(where: { $0.1 == nil }), given.contains(where: { $0.1 != nil }) {
                throw ServerConfigurationError(
                    missing.0, "is required with the other Apple key settings (apple.key-file, key-id, team-id)")
            }
            // Without a key nothing calls Apple: a setting of those calls would be read by nothing.
            let stray = [
                ("devicecheck-environment", environment != nil), ("devicecheck-url", deviceCheckURL != nil),
                ("receipt-url", receiptURL != nil), ("timeout", timeout != nil),
            ]
            if let (name, _) = stray.first(where: \.1) {
                throw ServerConfigurationError(
                    settings.key(name), "needs an Apple key (apple.key-file, key-id, team-id): without one it is unused"
                )
            }
            return nil
        }
        for (key, value) in [(settings.key("key-id"), keyID), (settings.key("team-id"), teamID)] {
            guard (1...64).contains(value.utf8.count), value.utf8.allSatisfy(Self.isASCIILetterOrDigit) else {
                throw ServerConfigurationError(key, "is 1 to 64 letters and digits")
            }
        }
        let pem = try ServerConfigurationSource.text(
            ofFile: keyFile, key: settings.key("key-file"), limit: pemFileLimit)
        do {
            _ = try AppleTokenProvider(privateKeyPEM: pem, keyID: keyID, teamID: teamID)
        } catch {
            throw ServerConfigurationError(settings.key("key-file"), "is not a PEM P-256 private key (.p8)")
        }
        var apple = Apple(privateKeyPEM: pem, keyID: keyID, teamID: teamID)
        if let environment { apple.deviceCheckEnvironment = environment }
        apple.deviceCheckBaseURL = deviceCheckURL
        apple.receiptExchangeURL = receiptURL
        if let timeout { apple.timeout = timeout }
        return apple
    }

    /// Apple's roots, or the two PEM roots of `trust.*` for tests.
    private static func trustAnchors(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> TrustAnchors {
        let attestationPath = try settings.string("trust.attestation-root")
        let receiptPath = try settings.string("trust.receipt-root")
        switch (attestationPath, receiptPath) {
        case (nil, nil):
            do {
                return try TrustAnchors.apple()
            } catch {
                throw ServerConfigurationError("trust", "Apple's embedded roots do not match their pins")
            }
        case (let attestationPath?, let receiptPath?):
            return TrustAnchors(
                attestation: try anchor(atPath: attestationPath, key: "trust.attestation-root"),
                receipt: try anchor(atPath: receiptPath, key: "trust.receipt-root"))
        case (nil, _?):
            throw ServerConfigurationError("trust.attestation-root", "is required with trust.receipt-root")
        case (_?, nil):
            throw ServerConfigurationError("trust.receipt-root", "is required with trust.attestation-root")
        }
    }

    /// A root read from a PEM file.
    private static func anchor(atPath path: String, key: String) throws(ServerConfigurationError) -> TrustAnchor {
        let pem = try ServerConfigurationSource.text(ofFile: path, key: key, limit: pemFileLimit)
        do {
            return try TrustAnchor(pem: pem)
        } catch {
            throw ServerConfigurationError(key, "'\(path)' is not a PEM certificate")
        }
    }

    /// The `policy.*` settings, from the reader scoped to `policy`.
    private static func policy(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> Policy {
        var policy = Policy()
        if let entries = try settings.words("validation-categories") {
            let key = settings.key("validation-categories")
            guard !entries.isEmpty else {
                throw ServerConfigurationError(key, "lists at least one category (leave it out to accept any)")
            }
            var allowed: Set<UInt32> = []
            for entry in entries {
                if entry.lowercased() == "unreported" {
                    policy.acceptsUnreported = true
                } else if let category = ValidationCategory(parsing: entry) {
                    allowed.insert(category.rawValue)
                } else if entry.lowercased() == "ad-hoc" {
                    throw ServerConfigurationError(
                        key,
                        "names ad-hoc, which Apple gives no category of its own: ad hoc builds report enterprise (5); "
                            + "write enterprise, which admits both")
                } else {
                    throw ServerConfigurationError(
                        key,
                        "holds category names ("
                            + ValidationCategory.names.map(\.name).joined(separator: ", ")
                            + "), numbers 0 to 4294967295, or unreported")
                }
            }
            policy.allowedValidationCategories = allowed
        }
        policy.minimumOSVersion = try settings.string("minimum-os-version")
        // Parsed as strictly as `apps` (`com.example.mac`, its Team ID left out, is no App ID); that each is one of
        // `apps` is the application configuration's check (`validate()`), for a configuration built in code too.
        // An empty list (an environment variable set to nothing, a blank secret file) would drop the macOS key
        // policy where a lower layer asked for it: refused, as an empty `validation-categories` is.
        if let appIDs = try settings.values("macos-app-ids", as: AppID.self) {
            guard !appIDs.isEmpty else {
                throw ServerConfigurationError(
                    settings.key("macos-app-ids"), "lists at least one App ID (leave it out when no app runs on macOS)")
            }
            policy.macOSAppIDs = Set(appIDs)
        }
        policy.minimumBundleVersion = try settings.string("minimum-bundle-version")
        if let change = try settings.choice(
            "validation-category-change", as: DeploymentPolicy.ValidationCategoryChange.self)
        {
            policy.validationCategoryChange = change
        }
        policy.riskMetricThreshold = try settings.int("risk-metric-threshold")
        if let unknownRisk = try settings.choice("unknown-risk", as: UnknownRisk.self) {
            policy.stepUpWhileRiskUnknown = unknownRisk == .stepUp
        }
        return policy
    }

    /// The values of `policy.unknown-risk`.
    private enum UnknownRisk: String, CaseIterable {
        case allow
        case stepUp = "step-up"
    }

    /// `http.backend-host` and `http.backend-port`, from the reader scoped to `http`: a second listener, or `nil`
    /// without a port.
    private static func backendListener(
        _ settings: StrictConfigReader, publicHost: String
    ) throws(ServerConfigurationError) -> Listener? {
        let host = try settings.string("backend-host")
        guard let port = try settings.int("backend-port") else {
            if host != nil {
                throw ServerConfigurationError(settings.key("backend-port"), "is required with http.backend-host")
            }
            return nil
        }
        return Listener(host: host ?? publicHost, port: port)
    }

    /// A number of seconds as a `Duration`, `name` in the reader's section; ``validate()`` checks the range of each.
    private static func duration(
        _ settings: StrictConfigReader,
        _ name: String
    ) throws(ServerConfigurationError) -> Duration? {
        guard let seconds = try settings.double(name) else { return nil }
        guard abs(seconds) <= 1_000_000_000 else {
            throw ServerConfigurationError(settings.key(name), "is out of range")
        }
        return .seconds(seconds)
    }

    /// Whether `byte` is an ASCII letter or digit.
    private static func isASCIILetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
    }
}

/// The values of `background.jobs`.
private enum BackgroundJobs: String, CaseIterable {
    case run
    case off
}

/// The values of `storage.migrations`.
private enum StorageMigrations: String, CaseIterable {
    case apply
    case verify
}

/// The values of `tokens.device-tokens`.
private enum DeviceTokenSale: String, CaseIterable {
    case refuse
    case accept
}
