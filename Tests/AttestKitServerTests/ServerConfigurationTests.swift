import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Configuration
import Crypto
import Foundation
import Logging
import Synchronization
import Testing

@testable import AttestKitServer

@Suite("Server configuration from flags, environment and a JSON file")
struct ServerConfigurationTests {
    static let token = "s3cret-admin-token-0123456789"

    @Test("an ATTESTKIT_ variable that names no setting is reported with the closest setting's; known ones are not")
    func unknownVariables() {
        let environment = [
            "ATTESTKIT_POLICY_VALIDATION_CATEGORY": "app-store", "ATTESTKIT_BACKEND_TOKEN": "secret-value",
            "ATTESTKIT_SOMETHING_ELSE_ENTIRELY": "1", "ATTESTKIT_ADMIN_TOKEN": "x", "ATTESTKIT_SECRETS_DIR": "/run",
            "ATTESTKIT_HTTP_PORT": "8080", "PATH": "/usr/bin", "attestkit_http_port": "1",
        ]
        let unknown = ServerConfigurationSource.unknownVariables(in: environment)
        #expect(
            unknown.map(\.name) == [
                "ATTESTKIT_BACKEND_TOKEN", "ATTESTKIT_POLICY_VALIDATION_CATEGORY", "ATTESTKIT_SOMETHING_ELSE_ENTIRELY",
            ])
        #expect(
            unknown.map(\.suggestion) == [
                "ATTESTKIT_BACKEND_TOKENS", "ATTESTKIT_POLICY_VALIDATION_CATEGORIES", nil,
            ])
        #expect(ServerConfigurationSource.editDistance("kitten", "sitting", atMost: 5) == 3)
        #expect(ServerConfigurationSource.editDistance("kitten", "sitting", atMost: 2) == 3)
        #expect(ServerConfigurationSource.editDistance("", "abc", atMost: 5) == 3)
        #expect(ServerConfigurationSource.editDistance("abc", "", atMost: 5) == 3)
        #expect(ServerConfigurationSource.editDistance("same", "same", atMost: 0) == 0)
    }

    @Test("With no source, the defaults of ServerConfiguration")
    func defaults() async throws {
        let loaded = try await ServerConfigurationSource.load(flags: [:], environment: [:], file: nil)
        let expected = ServerConfiguration(appIDs: [], trustAnchors: try TrustAnchors.apple())
        #expect(loaded.host == "127.0.0.1" && loaded.host == expected.host)
        #expect(loaded.port == 8080 && loaded.bodyLimit == 65_536)
        #expect(loaded.appIDs.isEmpty)
        #expect(loaded.environments == .production)
        #expect(loaded.storageURL == "sqlite:attestkit-data/attestkit.sqlite")
        #expect(loaded.apple == nil)
        #expect(loaded.trustAnchors.isApple)
        #expect(loaded.challengeTTL == .seconds(300) && loaded.leeway == 60 && loaded.timestampWindow == 300)
        #expect(loaded.policy == ServerConfiguration.Policy())
        #expect(loaded.rateLimits == ServerConfiguration.RateLimits(attestationsPerIP: 30, attestationsPerApp: 6_000))
        #expect(loaded.rateLimits.challengesPerIP == 120)
        #expect(loaded.adminToken == nil && loaded.backendTokens.isEmpty)
        #expect(loaded.backendListener == nil && loaded.trustedProxies.isEmpty)
        #expect(loaded.clientAddressHeader == .xForwardedFor)
        #expect(loaded.logLevel == .info && loaded.logFormat == .auto)
        #expect(loaded.receiptRefreshInterval == .seconds(60) && loaded.receiptRefreshBatch == 100)
        #expect(loaded.challengeCleanupInterval == .seconds(60))
        #expect(loaded.runsBackgroundJobs)
        #expect(loaded.receiptRefreshActiveWithin == 30 * 86_400 && loaded.keyExpiry == nil)
        #expect(loaded.ramp == AttestationRamp() && !loaded.ramp.isOn)
        #expect(loaded.ramp.share == 100 && loaded.ramp.dailyCeiling == 0 && loaded.ramp.recheckAfter == 21_600)
    }

    @Test("The attestation ramp (#33): a share with decimals, a daily ceiling and the recheck, read in range")
    func ramp() async throws {
        let set = try await ServerConfigurationSource.load(
            flags: [:],
            environment: [
                "ATTESTKIT_RAMP_SHARE": "12.5", "ATTESTKIT_RAMP_DAILY_CEILING": "50000",
                "ATTESTKIT_RAMP_RECHECK_AFTER": "3600",
            ], file: nil)
        #expect(set.ramp == AttestationRamp(share: 12.5, dailyCeiling: 50_000, recheckAfter: 3_600))
        let file = try TemporaryFile(json: #"{"ramp": {"share": 0, "daily-ceiling": 0}}"#)
        let fromFile = try await ServerConfigurationSource.load(flags: [:], environment: [:], file: file.path)
        #expect(fromFile.ramp.share == 0 && fromFile.ramp.isOn)
    }

    @Test("Key lifecycle: keys.expire-after 0 is off, seconds otherwise; receipt-refresh.active-within in seconds")
    func keyLifecycle() async throws {
        let set = try await ServerConfigurationSource.load(
            flags: [:],
            environment: [
                "ATTESTKIT_KEYS_EXPIRE_AFTER": "7776000", "ATTESTKIT_RECEIPT_REFRESH_ACTIVE_WITHIN": "604800",
            ], file: nil)
        #expect(set.keyExpiry == 7_776_000 && set.receiptRefreshActiveWithin == 604_800)
        let off = try await ServerConfigurationSource.load(
            flags: [:], environment: ["ATTESTKIT_KEYS_EXPIRE_AFTER": "0"], file: nil)
        #expect(off.keyExpiry == nil)
        #expect(set.maxClockSkew == 60, "storage.max-clock-skew: 60 seconds by default")
        let skew = try await ServerConfigurationSource.load(
            flags: [:], environment: ["ATTESTKIT_STORAGE_MAX_CLOCK_SKEW": "5"], file: nil)
        let unchecked = try await ServerConfigurationSource.load(
            flags: [:], environment: ["ATTESTKIT_STORAGE_MAX_CLOCK_SKEW": "0"], file: nil)
        #expect(skew.maxClockSkew == 5 && unchecked.maxClockSkew == nil)
    }

    @Test("Flags over environment over file over defaults, key by key")
    func layering() async throws {
        let file = try TemporaryFile(
            json: #"{"http": {"port": 8081, "host": "0.0.0.0", "body-limit": 4096}, "log": {"level": "debug"}}"#)
        let environment = ["ATTESTKIT_HTTP_PORT": "8082", "ATTESTKIT_HTTP_HOST": "10.0.0.1", "PATH": "/bin"]
        let flags: [String: ConfigValue] = ["http.port": 8083]

        let fileOnly = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        #expect(fileOnly.port == 8081 && fileOnly.host == "0.0.0.0" && fileOnly.bodyLimit == 4_096)
        #expect(fileOnly.logLevel == .debug)

        let withEnvironment = try await ServerConfigurationSource.load(environment: environment, file: file.path)
        #expect(withEnvironment.port == 8082 && withEnvironment.host == "10.0.0.1")
        #expect(withEnvironment.bodyLimit == 4_096 && withEnvironment.logLevel == .debug)

        let all = try await ServerConfigurationSource.load(flags: flags, environment: environment, file: file.path)
        #expect(all.port == 8083 && all.host == "10.0.0.1" && all.bodyLimit == 4_096)
        #expect(all.logFormat == .auto)

        let flagsOnly = try await ServerConfigurationSource.load(flags: flags, environment: [:])
        #expect(flagsOnly.port == 8083 && flagsOnly.host == "127.0.0.1")
    }

    @Test("log.format auto writes text to a terminal and JSON elsewhere; json and text are kept as set")
    func logFormatFollowsTheTerminal() async throws {
        typealias Format = ServerConfiguration.LogFormat
        #expect(Format.auto.resolved(terminal: true) == .text)
        #expect(Format.auto.resolved(terminal: false) == .json)
        for terminal in [true, false] {
            #expect(Format.json.resolved(terminal: terminal) == .json)
            #expect(Format.text.resolved(terminal: terminal) == .text)
        }
        let set = try await ServerConfigurationSource.load(environment: ["ATTESTKIT_LOG_FORMAT": "auto"])
        #expect(set.logFormat == .auto)
    }

    @Test("A JSON file may use dotted keys instead of nested objects")
    func dottedFileKeys() async throws {
        let file = try TemporaryFile(json: #"{"http.port": 9000, "rate-limit.challenges-per-ip": 5}"#)
        let loaded = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        #expect(loaded.port == 9_000 && loaded.rateLimits.challengesPerIP == 5)
    }

    @Test("Flags given as strings are parsed like environment values")
    func stringFlags() async throws {
        let loaded = try await ServerConfigurationSource.load(
            flags: [
                "http.port": "8090", "apps": "TEAM123456.com.example.a, TEAM123456.com.example.b", "leeway": "2.5",
            ],
            environment: [:])
        #expect(loaded.port == 8_090 && loaded.leeway == 2.5)
        #expect(loaded.appIDs.map(\.description) == ["TEAM123456.com.example.a", "TEAM123456.com.example.b"])
    }

    @Test("Environment variable names: ATTESTKIT_ + key, upper-cased, . and - as _")
    func environmentNames() async throws {
        #expect(ServerConfigurationSource.environmentVariable(for: "http.port") == "ATTESTKIT_HTTP_PORT")
        #expect(
            ServerConfigurationSource.environmentVariable(for: "rate-limit.attestations-per-ip")
                == "ATTESTKIT_RATE_LIMIT_ATTESTATIONS_PER_IP")
        let environment = [
            "ATTESTKIT_HTTP_HOST": "0.0.0.0",
            "ATTESTKIT_HTTP_PORT": "0",
            "ATTESTKIT_HTTP_BODY_LIMIT": "2048",
            "ATTESTKIT_APPS": "TEAM123456.com.example.app,TEAM123456.com.example.clip",
            "ATTESTKIT_ENVIRONMENTS": "both",
            "ATTESTKIT_STORAGE_URL": "memory:",
            "ATTESTKIT_CHALLENGE_TTL": "30",
            "ATTESTKIT_LEEWAY": "5",
            "ATTESTKIT_ASSERTION_TIMESTAMP_WINDOW": "120.5",
            "ATTESTKIT_POLICY_VALIDATION_CATEGORIES": "1, 2",
            "ATTESTKIT_POLICY_MINIMUM_OS_VERSION": "17.4",
            "ATTESTKIT_POLICY_RISK_METRIC_THRESHOLD": "3",
            "ATTESTKIT_RATE_LIMIT_ATTESTATIONS_PER_IP": "7",
            "ATTESTKIT_RATE_LIMIT_ATTESTATIONS_PER_APP": "0",
            "ATTESTKIT_RATE_LIMIT_CHALLENGES_PER_IP": "9",
            "ATTESTKIT_ADMIN_TOKEN": Self.token,
            "ATTESTKIT_LOG_LEVEL": "warning",
            "ATTESTKIT_LOG_FORMAT": "text",
            "ATTESTKIT_RECEIPT_REFRESH_INTERVAL": "0.05",
            "ATTESTKIT_RECEIPT_REFRESH_BATCH": "10",
            "ATTESTKIT_CHALLENGE_CLEANUP_INTERVAL": "2",
            "ATTESTKIT_BACKGROUND_JOBS": "off",
            "HTTP_PORT": "1",
            "attestkit_http_port": "2",
        ]
        let loaded = try await ServerConfigurationSource.load(environment: environment)
        #expect(loaded.host == "0.0.0.0" && loaded.port == 0 && loaded.bodyLimit == 2_048)
        #expect(loaded.appIDs.map(\.bundleID) == ["com.example.app", "com.example.clip"])
        #expect(loaded.environments == .both && loaded.storageURL == "memory:")
        #expect(loaded.challengeTTL == .seconds(30) && loaded.leeway == 5 && loaded.timestampWindow == 120.5)
        #expect(
            loaded.policy
                == ServerConfiguration.Policy(
                    allowedValidationCategories: [1, 2], minimumOSVersion: "17.4", riskMetricThreshold: 3))
        #expect(
            loaded.rateLimits
                == ServerConfiguration.RateLimits(attestationsPerIP: 7, attestationsPerApp: 0, challengesPerIP: 9))
        #expect(loaded.adminToken == Self.token)
        #expect(loaded.logLevel == .warning && loaded.logFormat == .text)
        #expect(loaded.receiptRefreshInterval == .milliseconds(50) && loaded.receiptRefreshBatch == 10)
        #expect(!loaded.runsBackgroundJobs)
        #expect(loaded.challengeCleanupInterval == .seconds(2))
    }

    @Test(
        "policy.validation-categories: Apple's names, numbers, unreported; the iOS 27 minimum and category change",
        arguments: [
            (#"{"policy": {"validation-categories": ["app-store", "TestFlight", "5", "unreported"]}}"#, true),
            (#"{"policy": {"validation-categories": [4, 2, 5]}}"#, false),
            (#"{"policy": {"validation-categories": "app-store, 2, enterprise"}}"#, false),
        ])
    func iOS27Policy(json: String, unreported: Bool) async throws {
        let settings = #", "minimum-bundle-version": "2.10", "validation-category-change": "allow"}}"#
        let file = try TemporaryFile(json: String(json.dropLast(2)) + settings)
        let loaded = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        #expect(loaded.policy.allowedValidationCategories == [4, 2, 5])
        #expect(loaded.policy.acceptsUnreported == unreported)
        #expect(loaded.policy.minimumBundleVersion == "2.10")
        #expect(!loaded.policy.refusesValidationCategoryChange && loaded.policy.validationCategoryChange == .allow)
        let stepUp = try await ServerConfigurationSource.load(
            environment: ["ATTESTKIT_POLICY_VALIDATION_CATEGORY_CHANGE": "step-up"])
        #expect(stepUp.policy.validationCategoryChange == .stepUp && stepUp.policy.stepsUpOnValidationCategoryChange)
        let defaults = try await ServerConfigurationSource.load(environment: [:])
        #expect(defaults.policy.refusesValidationCategoryChange && !defaults.policy.acceptsUnreported)
        #expect(defaults.policy.allowedValidationCategories == nil && defaults.policy.minimumBundleVersion == nil)
    }

    @Test("init(reader:) reads every key of the table of settings, and only those")
    func keysRead() async throws {
        let reporter = CollectingReporter()
        _ = try await ServerConfigurationSource.load(environment: [:], accessReporter: reporter)
        let read = Set(reporter.events.map { $0.metadata.key.description })
        #expect(read == Set(ServerSetting.all.map(\.key)))
    }

    /// A value in some layer that must be refused, and the key the error must name.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var flags: [String: ConfigValue] = [:]
        var environment: [String: String] = [:]
        var json: String?
        var key: String
        var testDescription: String { "\(key): \(flags) \(environment) \(json ?? "")" }
    }

    static let refusals: [Refusal] = [
        Refusal(environment: ["ATTESTKIT_HTTP_PORT": "abc"], key: "http.port"),
        Refusal(flags: ["record.max-bundles-per-key": 5], key: "record.max-bundles-per-key"),
        Refusal(
            flags: ["record.directory": "/tmp/attestkit-bundles", "record.max-bundles-per-key": 0],
            key: "record.max-bundles-per-key"),
        Refusal(
            flags: [
                "record.directory": "/tmp/attestkit-bundles", "record.max-bundles": 10,
                "record.max-bundles-per-key": 11,
            ], key: "record.max-bundles-per-key"),
        Refusal(environment: ["ATTESTKIT_HTTP_PORT": "70000"], key: "http.port"),
        Refusal(flags: ["http.port": 70_000], key: "http.port"),
        Refusal(flags: ["http.port": "8080x"], key: "http.port"),
        Refusal(flags: ["http.port": true], key: "http.port"),
        Refusal(flags: ["http.port": 80.5], key: "http.port"),
        Refusal(json: #"{"http": {"port": "abc"}}"#, key: "http.port"),
        Refusal(json: #"{"http": {"port": [8080]}}"#, key: "http.port"),
        Refusal(json: #"{"http": {"port": 8080.5}}"#, key: "http.port"),
        Refusal(json: #"{"http": {"port": true}}"#, key: "http.port"),
        Refusal(json: #"{"policy": {"validation-categories": [1, false]}}"#, key: "policy.validation-categories"),
        Refusal(environment: ["ATTESTKIT_ENVIRONMENTS": "staging"], key: "environments"),
        Refusal(json: #"{"environments": ["production"]}"#, key: "environments"),
        Refusal(environment: ["ATTESTKIT_APPS": "nope"], key: "apps"),
        Refusal(json: #"{"apps": ["TEAM123456.com.example", "nope"]}"#, key: "apps"),
        Refusal(json: #"{"apps": [1, 2]}"#, key: "apps"),
        Refusal(environment: ["ATTESTKIT_LOG_LEVEL": "loud"], key: "log.level"),
        Refusal(environment: ["ATTESTKIT_LOG_FORMAT": "xml"], key: "log.format"),
        Refusal(environment: ["ATTESTKIT_APPLE_KEY_ID": "ABC123DEFG"], key: "apple.key-file"),
        Refusal(
            environment: ["ATTESTKIT_APPLE_KEY_ID": "ABC123DEFG", "ATTESTKIT_APPLE_KEY_FILE": "/nonexistent.p8"],
            key: "apple.team-id"),
        Refusal(
            environment: ["ATTESTKIT_APPLE_DEVICECHECK_ENVIRONMENT": "sandbox"], key: "apple.devicecheck-environment"),
        Refusal(environment: ["ATTESTKIT_APPLE_DEVICECHECK_URL": "ftp://x"], key: "apple.devicecheck-url"),
        Refusal(environment: ["ATTESTKIT_APPLE_TIMEOUT": "soon"], key: "apple.timeout"),
        // Well-formed, but read by nothing without an Apple key.
        Refusal(environment: ["ATTESTKIT_APPLE_TIMEOUT": "5"], key: "apple.timeout"),
        Refusal(
            environment: ["ATTESTKIT_APPLE_DEVICECHECK_ENVIRONMENT": "development"],
            key: "apple.devicecheck-environment"),
        Refusal(environment: ["ATTESTKIT_APPLE_DEVICECHECK_URL": "https://example.com"], key: "apple.devicecheck-url"),
        Refusal(
            environment: ["ATTESTKIT_APPLE_RECEIPT_URL": "https://example.com/v1/attestationData"],
            key: "apple.receipt-url"),
        Refusal(environment: ["ATTESTKIT_TRUST_RECEIPT_ROOT": "/tmp/root.pem"], key: "trust.attestation-root"),
        Refusal(environment: ["ATTESTKIT_CHALLENGE_TTL": "nan"], key: "challenge.ttl"),
        Refusal(environment: ["ATTESTKIT_CHALLENGE_TTL": "1e300"], key: "challenge.ttl"),
        Refusal(environment: ["ATTESTKIT_LEEWAY": "-1"], key: "leeway"),
        Refusal(environment: ["ATTESTKIT_CHALLENGE_CLEANUP_INTERVAL": "0"], key: "challenge-cleanup.interval"),
        Refusal(environment: ["ATTESTKIT_CHALLENGE_CLEANUP_INTERVAL": "999999999"], key: "challenge-cleanup.interval"),
        Refusal(environment: ["ATTESTKIT_RECEIPT_REFRESH_INTERVAL": "0.001"], key: "receipt-refresh.interval"),
        Refusal(environment: ["ATTESTKIT_POLICY_VALIDATION_CATEGORIES": "1,x"], key: "policy.validation-categories"),
        Refusal(json: #"{"policy": {"validation-categories": []}}"#, key: "policy.validation-categories"),
        Refusal(json: #"{"policy": {"validation-categories": [-1]}}"#, key: "policy.validation-categories"),
        Refusal(json: #"{"policy": {"minimum-os-version": 17.4}}"#, key: "policy.minimum-os-version"),
        Refusal(environment: ["ATTESTKIT_POLICY_MINIMUM_OS_VERSION": "seventeen"], key: "policy.minimum-os-version"),
        Refusal(environment: ["ATTESTKIT_POLICY_VALIDATION_CATEGORIES": "ad-hoc"], key: "policy.validation-categories"),
        Refusal(
            environment: ["ATTESTKIT_POLICY_VALIDATION_CATEGORIES": "app-store,appstore"],
            key: "policy.validation-categories"),
        Refusal(environment: ["ATTESTKIT_POLICY_VALIDATION_CATEGORIES": ","], key: "policy.validation-categories"),
        Refusal(
            environment: ["ATTESTKIT_POLICY_MINIMUM_BUNDLE_VERSION": "2.0b1"], key: "policy.minimum-bundle-version"),
        Refusal(json: #"{"policy": {"minimum-bundle-version": "1..2"}}"#, key: "policy.minimum-bundle-version"),
        Refusal(
            environment: ["ATTESTKIT_POLICY_VALIDATION_CATEGORY_CHANGE": "stepup"],
            key: "policy.validation-category-change"),
        Refusal(environment: ["ATTESTKIT_RATE_LIMIT_ATTESTATIONS_PER_IP": "-1"], key: "rate-limit.attestations-per-ip"),
        Refusal(environment: ["ATTESTKIT_RAMP_SHARE": "100.5"], key: "ramp.share"),
        Refusal(environment: ["ATTESTKIT_RAMP_SHARE": "-1"], key: "ramp.share"),
        Refusal(environment: ["ATTESTKIT_RAMP_SHARE": "nan"], key: "ramp.share"),
        Refusal(environment: ["ATTESTKIT_RAMP_SHARE": "half"], key: "ramp.share"),
        Refusal(environment: ["ATTESTKIT_RAMP_DAILY_CEILING": "-1"], key: "ramp.daily-ceiling"),
        Refusal(json: #"{"ramp": {"daily-ceiling": 1000001}}"#, key: "ramp.daily-ceiling"),
        Refusal(json: #"{"ramp": {"daily-ceiling": 10.5}}"#, key: "ramp.daily-ceiling"),
        Refusal(environment: ["ATTESTKIT_RAMP_RECHECK_AFTER": "0"], key: "ramp.recheck-after"),
        Refusal(environment: ["ATTESTKIT_RAMP_RECHECK_AFTER": "604801"], key: "ramp.recheck-after"),
        Refusal(environment: ["ATTESTKIT_ADMIN_TOKEN": "short"], key: "admin.token"),
        Refusal(environment: ["ATTESTKIT_ENFORCEMENT_MODE": "warn"], key: "enforcement.mode"),
        Refusal(environment: ["ATTESTKIT_ENFORCEMENT_ROLLOUT": "1.5"], key: "enforcement.rollout"),
        Refusal(environment: ["ATTESTKIT_ENFORCEMENT_MINIMUM_TRUST": "high"], key: "enforcement.minimum-trust"),
        Refusal(environment: ["ATTESTKIT_DEBUG_TOKENS": "short-debug-token"], key: "debug.tokens"),
        // A debug token ships in test builds: never also a backend or operator credential (each long enough for
        // both, so that only their equality is refused).
        Refusal(
            environment: [
                "ATTESTKIT_ENVIRONMENTS": "development",
                "ATTESTKIT_BACKEND_TOKENS": "shared-token-0123456789-0123456789",
                "ATTESTKIT_DEBUG_TOKENS": "debug-token-0123456789-0123456789,shared-token-0123456789-0123456789",
            ], key: "debug.tokens"),
        Refusal(
            environment: [
                "ATTESTKIT_ENVIRONMENTS": "development", "ATTESTKIT_ADMIN_TOKEN": "admin-token-0123456789-0123456789",
                "ATTESTKIT_DEBUG_TOKENS": "admin-token-0123456789-0123456789",
            ], key: "debug.tokens"),
        Refusal(
            environment: [
                "ATTESTKIT_ENVIRONMENTS": "development", "ATTESTKIT_ADMIN_TOKEN": token,
                "ATTESTKIT_ADMIN_PREVIOUS_TOKENS": "previous-admin-0123456789-0123456789",
                "ATTESTKIT_DEBUG_TOKENS": "previous-admin-0123456789-0123456789",
            ], key: "debug.tokens"),
        Refusal(environment: ["ATTESTKIT_DASHBOARD_SESSION_LIFETIME": "5"], key: "dashboard.session-lifetime"),
        Refusal(environment: ["ATTESTKIT_DEVICECHECK_STATES": "trial-and-bans"], key: "devicecheck.states"),
        Refusal(environment: ["ATTESTKIT_BACKEND_TOKENS": "backend-token-0123456789,short"], key: "backend.tokens"),
        Refusal(
            environment: ["ATTESTKIT_BACKEND_TOKENS": token, "ATTESTKIT_ADMIN_TOKEN": token], key: "backend.tokens"),
        // Admin token rotation: previous admin tokens are long, differ from admin.token and the backend tokens, and
        // need admin.token.
        Refusal(
            environment: [
                "ATTESTKIT_ADMIN_TOKEN": token, "ATTESTKIT_ADMIN_PREVIOUS_TOKENS": "previous-admin-0123,short",
            ],
            key: "admin.previous-tokens"),
        Refusal(
            environment: ["ATTESTKIT_ADMIN_TOKEN": token, "ATTESTKIT_ADMIN_PREVIOUS_TOKENS": token],
            key: "admin.previous-tokens"),
        Refusal(
            environment: [
                "ATTESTKIT_ADMIN_TOKEN": token, "ATTESTKIT_BACKEND_TOKENS": "backend-token-0123456789",
                "ATTESTKIT_ADMIN_PREVIOUS_TOKENS": "previous-admin-0123,backend-token-0123456789",
            ],
            key: "admin.previous-tokens"),
        Refusal(
            environment: ["ATTESTKIT_ADMIN_PREVIOUS_TOKENS": "previous-admin-token-0123"], key: "admin.previous-tokens"),
        Refusal(json: #"{"admin": {"previous-tokens": ["previous-admin-token-0123"]}}"#, key: "admin.previous-tokens"),
        Refusal(environment: ["ATTESTKIT_HTTP_BACKEND_HOST": "127.0.0.1"], key: "http.backend-port"),
        Refusal(environment: ["ATTESTKIT_HTTP_BACKEND_PORT": "8080"], key: "http.backend-port"),
        Refusal(environment: ["ATTESTKIT_HTTP_BACKEND_PORT": "70000"], key: "http.backend-port"),
        Refusal(environment: ["ATTESTKIT_HTTP_TRUSTED_PROXIES": "10.0.0.0/8,10.0.0.0/33"], key: "http.trusted-proxies"),
        Refusal(environment: ["ATTESTKIT_HTTP_TRUSTED_PROXIES": "proxy.example"], key: "http.trusted-proxies"),
        Refusal(environment: ["ATTESTKIT_HTTP_CLIENT_ADDRESS_HEADER": "x-real-ip"], key: "http.client-address-header"),
        Refusal(environment: ["ATTESTKIT_POLICY_UNKNOWN_RISK": "maybe"], key: "policy.unknown-risk"),
        Refusal(environment: ["ATTESTKIT_STORAGE_URL": "mysql://db"], key: "storage.url"),
        Refusal(environment: ["ATTESTKIT_RECEIPT_REFRESH_BATCH": "0"], key: "receipt-refresh.batch"),
        Refusal(environment: ["ATTESTKIT_KEYS_EXPIRE_AFTER": "-1"], key: "keys.expire-after"),
        Refusal(environment: ["ATTESTKIT_STORAGE_MAX_CLOCK_SKEW": "86401"], key: "storage.max-clock-skew"),
        Refusal(environment: ["ATTESTKIT_STORAGE_MAX_CLOCK_SKEW": "-5"], key: "storage.max-clock-skew"),
        Refusal(environment: ["ATTESTKIT_KEYS_EXPIRE_AFTER": "nan"], key: "keys.expire-after"),
        Refusal(environment: ["ATTESTKIT_KEYS_EXPIRE_AFTER": "1e12"], key: "keys.expire-after"),
        Refusal(environment: ["ATTESTKIT_RECEIPT_REFRESH_ACTIVE_WITHIN": "59"], key: "receipt-refresh.active-within"),
        Refusal(environment: ["ATTESTKIT_HTTP_READ_TIMEOUT": "0"], key: "http.read-timeout"),
        Refusal(environment: ["ATTESTKIT_HTTP_READ_TIMEOUT": "nan"], key: "http.read-timeout"),
        Refusal(json: #"{"http": {"idle-timeout": 601}}"#, key: "http.idle-timeout"),
        Refusal(flags: ["http.idle-timeout": "soon"], key: "http.idle-timeout"),
        Refusal(environment: ["ATTESTKIT_HTTP_MAX_CONNECTIONS": "0"], key: "http.max-connections"),
        Refusal(json: #"{"http": {"max-connections": 10.5}}"#, key: "http.max-connections"),
        Refusal(environment: ["ATTESTKIT_TOKENS_TTL": "600"], key: "tokens.ttl"),
        Refusal(environment: ["ATTESTKIT_TOKENS_PREVIOUS_KEY_FILES": "/tmp/old.pem"], key: "tokens.previous-key-files"),
        Refusal(environment: ["ATTESTKIT_TOKENS_SIGNING_KEY_FILE": "/nonexistent.pem"], key: "tokens.signing-key-file"),
        Refusal(flags: ["http.prot": 1], key: "http.prot"),
        Refusal(json: #"{"http": {"prot": 1}}"#, key: "http.prot"),
        Refusal(json: #"["not", "an", "object"]"#, key: "config-file"),
        Refusal(json: #"{"http": "#, key: "config-file"),
    ]

    @Test("A wrong type or value is an error naming the key, never the default", arguments: refusals)
    func refused(_ refusal: Refusal) async throws {
        let file = try refusal.json.map { try TemporaryFile(json: $0) }
        let error = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(
                flags: refusal.flags, environment: refusal.environment, file: file?.path)
        }
        #expect(error?.key == refusal.key)
        if refusal.key == "config-file", let file { #expect(error?.reason.contains(file.path) == true) }
    }

    @Test("A missing configuration file is an error naming it")
    func missingFile() async throws {
        let path = "/nonexistent/attestkit-\(UUID().uuidString).json"
        let error = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.reader(environment: [:], file: path)
        }
        #expect(error?.key == "config-file")
        #expect(error?.reason.contains(path) == true)
    }

    @Test("Session tokens: the signing key read and checked, previous keys, names and a bounded lifetime")
    func tokens() async throws {
        let signing = P256.Signing.PrivateKey()
        let previous = P256.Signing.PrivateKey()
        let key = try TemporaryFile(contents: signing.pemRepresentation, extension: "pem")
        let old = try TemporaryFile(contents: previous.publicKey.pemRepresentation, extension: "pem")
        let notAKey = try TemporaryFile(contents: "-----BEGIN PRIVATE KEY-----\nAAAA\n", extension: "pem")
        let environment = [
            "ATTESTKIT_TOKENS_SIGNING_KEY_FILE": key.path, "ATTESTKIT_TOKENS_PREVIOUS_KEY_FILES": old.path,
            "ATTESTKIT_TOKENS_ISSUER": "https://attest.example", "ATTESTKIT_TOKENS_AUDIENCE": "orders",
            "ATTESTKIT_TOKENS_TTL": "900",
        ]
        let tokens = try #require(try await ServerConfigurationSource.load(environment: environment).tokens)
        #expect(tokens.signingKey.kid == TokenKey(publicKey: signing.publicKey).kid)
        #expect(tokens.previousKeys.map(\.kid) == [TokenKey(publicKey: previous.publicKey).kid])
        #expect(tokens.issuer == "https://attest.example" && tokens.audience == "orders")
        #expect(tokens.lifetime == .seconds(900))
        let defaults = try #require(
            try await ServerConfigurationSource.load(environment: ["ATTESTKIT_TOKENS_SIGNING_KEY_FILE": key.path])
                .tokens)
        #expect(
            defaults.lifetime == .seconds(900) && defaults.issuer == "attestkit" && defaults.audience == "attestkit")
        #expect(try await ServerConfigurationSource.load(environment: [:]).tokens == nil)
        for (change, refusedKey) in [
            (["ATTESTKIT_TOKENS_TTL": "299"], "tokens.ttl"), (["ATTESTKIT_TOKENS_TTL": "604801"], "tokens.ttl"),
            (["ATTESTKIT_TOKENS_TTL": "600.5"], "tokens.ttl"), (["ATTESTKIT_TOKENS_AUDIENCE": ""], "tokens.audience"),
            (["ATTESTKIT_TOKENS_SIGNING_KEY_FILE": notAKey.path], "tokens.signing-key-file"),
            // A public key cannot sign.
            (["ATTESTKIT_TOKENS_SIGNING_KEY_FILE": old.path], "tokens.signing-key-file"),
            (["ATTESTKIT_TOKENS_PREVIOUS_KEY_FILES": notAKey.path], "tokens.previous-key-files"),
        ] {
            let error = await #expect(throws: ServerConfigurationError.self) {
                try await ServerConfigurationSource.load(environment: environment.merging(change) { $1 })
            }
            #expect(error?.key == refusedKey, "\(change)")
        }
    }

    @Test("serve refuses Apple's hosts replaced (a mock's) while production keys are allowed; the settings still load")
    func appleHostsReplacedInProduction() async throws {
        let key = try TemporaryFile(contents: P256.Signing.PrivateKey().pemRepresentation, extension: "p8")
        for (variable, setting) in [
            ("ATTESTKIT_APPLE_DEVICECHECK_URL", "apple.devicecheck-url"),
            ("ATTESTKIT_APPLE_RECEIPT_URL", "apple.receipt-url"),
        ] {
            var environment = [
                "ATTESTKIT_APPS": "TEAM123456.com.example.app", "ATTESTKIT_STORAGE_URL": "memory:",
                "ATTESTKIT_APPLE_KEY_FILE": key.path, "ATTESTKIT_APPLE_KEY_ID": "ABC123DEFG",
                "ATTESTKIT_APPLE_TEAM_ID": "TEAM123456", variable: "http://127.0.0.1:9",
            ]
            // `attestkit devicecheck` and `receipt` read the same settings, and may point at a mock.
            let production = try await ServerConfigurationSource.load(environment: environment)
            let error = #expect(throws: ServerConfigurationError.self) {
                try AttestKitServer(configuration: production, store: MemoryAttestationStore())
            }
            #expect(error?.key == setting)
            #expect(error?.description.contains("production keys are allowed") == true, "\(String(describing: error))")
            environment["ATTESTKIT_ENVIRONMENTS"] = "development"
            let development = try await ServerConfigurationSource.load(environment: environment)
            _ = try AttestKitServer(configuration: development, store: MemoryAttestationStore())
        }
    }

    @Test("An Apple key: all three settings, the key file read and checked")
    func appleKey() async throws {
        let key = try TemporaryFile(contents: P256.Signing.PrivateKey().pemRepresentation, extension: "p8")
        let environment = [
            "ATTESTKIT_APPLE_KEY_FILE": key.path,
            "ATTESTKIT_APPLE_KEY_ID": "ABC123DEFG",
            "ATTESTKIT_APPLE_TEAM_ID": "TEAM123456",
            "ATTESTKIT_APPLE_DEVICECHECK_ENVIRONMENT": "development",
            "ATTESTKIT_APPLE_DEVICECHECK_URL": "http://127.0.0.1:9999",
            "ATTESTKIT_APPLE_TIMEOUT": "2.5",
        ]
        let loaded = try await ServerConfigurationSource.load(environment: environment)
        let apple = try #require(loaded.apple)

        // An app of another team: Apple would refuse its receipts and DeviceCheck tokens with this key.
        var otherTeam = environment
        otherTeam["ATTESTKIT_APPS"] = "TEAM123456.com.example.app,OTHER12345.com.example.app"
        let teamError = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(environment: otherTeam)
        }
        #expect(teamError?.key == "apple.team-id")
        otherTeam["ATTESTKIT_APPS"] = "TEAM123456.com.example.app"
        #expect(try await ServerConfigurationSource.load(environment: otherTeam).appIDs.count == 1)

        // A receipt exchange started at half the lease must end within it: the lease is more than twice the timeout.
        var shortLease = environment
        shortLease["ATTESTKIT_RECEIPT_REFRESH_LEASE"] = "5"
        let leaseError = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(environment: shortLease)
        }
        #expect(leaseError?.key == "receipt-refresh.lease")
        shortLease["ATTESTKIT_RECEIPT_REFRESH_LEASE"] = "5.1"
        #expect(try await ServerConfigurationSource.load(environment: shortLease).receiptRefreshLease == .seconds(5.1))
        #expect(apple.privateKeyPEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(apple.keyID == "ABC123DEFG" && apple.teamID == "TEAM123456")
        #expect(apple.deviceCheckEnvironment == .development && apple.timeout == 2.5)
        #expect(apple.deviceCheckBaseURL == "http://127.0.0.1:9999" && apple.receiptExchangeURL == nil)

        let notAKey = try TemporaryFile(contents: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
        var broken = environment
        broken["ATTESTKIT_APPLE_KEY_FILE"] = notAKey.path
        let error = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(environment: broken)
        }
        #expect(error?.key == "apple.key-file")
        #expect(error?.description.contains("AAAA") == false)

        var missing = environment
        missing["ATTESTKIT_APPLE_KEY_FILE"] = "/nonexistent/AuthKey.p8"
        let missingError = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(environment: missing)
        }
        #expect(missingError?.key == "apple.key-file")
    }

    @Test("Test trust anchors (software Apple) load for development, and are refused with production")
    func testTrustAnchors() async throws {
        let softwareApple = try SoftwareApple()
        let attestationRoot = try TemporaryFile(contents: softwareApple.attestationRootPEM, extension: "pem")
        let receiptRoot = try TemporaryFile(contents: softwareApple.receiptRootPEM, extension: "pem")
        let flags: [String: ConfigValue] = [
            "trust.attestation-root": .init(.string(attestationRoot.path), isSecret: false),
            "trust.receipt-root": .init(.string(receiptRoot.path), isSecret: false),
        ]

        let development = try await ServerConfigurationSource.load(
            flags: flags, environment: ["ATTESTKIT_ENVIRONMENTS": "development"])
        #expect(development.trustAnchors == softwareApple.trustAnchors)
        #expect(!development.trustAnchors.isApple)

        for environments in ["production", "both"] {
            let error = await #expect(throws: ServerConfigurationError.self) {
                try await ServerConfigurationSource.load(
                    flags: flags, environment: ["ATTESTKIT_ENVIRONMENTS": environments])
            }
            #expect(error?.key == "environments")
        }

        let notPEM = try TemporaryFile(contents: "not a certificate")
        var wrong = flags
        wrong["trust.receipt-root"] = .init(.string(notPEM.path), isSecret: false)
        let error = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(
                flags: wrong, environment: ["ATTESTKIT_ENVIRONMENTS": "development"])
        }
        #expect(error?.key == "trust.receipt-root")
    }

    @Test("The admin token and the storage URL never appear in descriptions or access events")
    func secretsRedacted() async throws {
        let storage = "postgres://attestkit:db-pa55word@db.internal/attest"
        let file = try TemporaryFile(
            json: #"{"admin": {"token": "\#(Self.token)-file"}, "storage.url": "\#(storage)"}"#)
        let layers: [(flags: [String: ConfigValue], environment: [String: String])] = [
            (["admin.token": .init(.string(Self.token + "-flag"), isSecret: false)], [:]),
            ([:], ["ATTESTKIT_ADMIN_TOKEN": Self.token + "-env", "ATTESTKIT_STORAGE_URL": storage]),
            ([:], [:]),
        ]
        for layer in layers {
            let reporter = CollectingReporter()
            let providers = try await ServerConfigurationSource.providers(
                flags: layer.flags, environment: layer.environment, file: file.path)
            let reader = try await ServerConfigurationSource.reader(
                flags: layer.flags, environment: layer.environment, file: file.path, accessReporter: reporter)
            let loaded = try ServerConfiguration(reader: reader)
            #expect(loaded.adminToken?.hasPrefix(Self.token) == true)
            #expect(loaded.storageURL == storage)

            var printed = [String(describing: reader), String(reflecting: reader)]
            printed += providers.flatMap { [String(describing: $0), String(reflecting: $0)] }
            printed += reporter.events.map(\.description)
            printed += reporter.events.flatMap { event in
                event.providerResults.map { "\($0.providerName) \($0.result)" }
            }
            #expect(printed.contains { $0.contains("REDACTED") })
            for text in printed {
                #expect(!text.contains(Self.token))
                #expect(!text.contains("db-pa55word"))
            }
        }
    }
}

/// Records every access event.
final class CollectingReporter: AccessReporter {
    private let recorded = Mutex<[AccessEvent]>([])

    var events: [AccessEvent] { recorded.withLock { $0 } }

    func report(_ event: AccessEvent) {
        recorded.withLock { $0.append(event) }
    }
}

/// A file in the temporary directory, removed when the value goes away.
final class TemporaryFile: Sendable {
    let path: String

    init(contents: String, extension fileExtension: String = "txt") throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("attestkit-config-\(UUID().uuidString).\(fileExtension)").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
    }

    convenience init(json: String) throws {
        try self.init(contents: json, extension: "json")
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

@Suite("DeviceCheck state names in the configuration")
struct DeviceCheckStatesConfigurationTests {
    @Test("four names from the environment, in bit order; three names refused naming the key")
    func fromEnvironment() async throws {
        let loaded = try await ServerConfigurationSource.load(
            environment: ["ATTESTKIT_DEVICECHECK_STATES": "fresh,trial,used,banned"])
        let states = try #require(loaded.deviceCheckStates)
        #expect(states.name(bit0: false, bit1: false) == "fresh")
        #expect(states.name(bit0: true, bit1: false) == "trial")
        #expect(states.name(bit0: false, bit1: true) == "used")
        #expect(states.bits(of: "banned")! == (true, true))
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: ["ATTESTKIT_DEVICECHECK_STATES": "a,b,c"])
        } throws: { ($0 as? ServerConfigurationError)?.key == "devicecheck.states" }
    }
}

@Suite("Backend credentials, listeners and proxies in the configuration")
struct TrustConfigurationTests {
    @Test("backend tokens from the environment, several at once; a second listener; trusted proxies")
    func readsTrustSettings() async throws {
        let loaded = try await ServerConfigurationSource.load(
            environment: [
                "ATTESTKIT_BACKEND_TOKENS": "backend-token-0123456789, backend-token-next-0123456",
                "ATTESTKIT_HTTP_HOST": "0.0.0.0", "ATTESTKIT_HTTP_BACKEND_PORT": "9090",
                "ATTESTKIT_HTTP_TRUSTED_PROXIES": "10.0.0.0/8, 2001:db8::/32, 192.0.2.7",
                "ATTESTKIT_POLICY_UNKNOWN_RISK": "step-up", "ATTESTKIT_HTTP_CLIENT_ADDRESS_HEADER": "forwarded",
            ])
        #expect(loaded.clientAddressHeader == .forwarded)
        #expect(loaded.backendTokens == ["backend-token-0123456789", "backend-token-next-0123456"])
        #expect(loaded.backendListener == .init(host: "0.0.0.0", port: 9_090))
        #expect(loaded.trustedProxies.map(\.description) == ["10.0.0.0/8", "2001:db8:0:0:0:0:0:0/32", "192.0.2.7/32"])
        #expect(loaded.policy.stepUpWhileRiskUnknown)
    }

    @Test("admin token rotation: admin.previous-tokens from the environment, several, secret like admin.token")
    func readsAdminPreviousTokens() async throws {
        let previous = ["previous-admin-token-never-shown-1", "previous-admin-token-never-shown-2"]
        let reporter = CollectingReporter()
        let reader = try await ServerConfigurationSource.reader(
            environment: [
                "ATTESTKIT_ADMIN_TOKEN": "current-admin-token-0123456789",
                "ATTESTKIT_ADMIN_PREVIOUS_TOKENS": previous.joined(separator: ", "),
            ],
            accessReporter: reporter)
        let loaded = try ServerConfiguration(reader: reader)
        #expect(loaded.adminToken == "current-admin-token-0123456789" && loaded.adminPreviousTokens == previous)
        var printed = [String(describing: reader), String(reflecting: reader)]
        printed += reporter.events.map(\.description)
        printed += reporter.events.flatMap { event in event.providerResults.map { "\($0.providerName) \($0.result)" } }
        for token in previous { #expect(printed.allSatisfy { !$0.contains(token) }, "\(token) printed") }
        #expect(ServerConfiguration.secretKeys.contains("admin.previous-tokens"))
        let defaults = try await ServerConfigurationSource.load(environment: [:])
        #expect(defaults.adminPreviousTokens.isEmpty)
    }

    @Test("the backend tokens are secrets: never in descriptions or access events")
    func backendTokensAreSecret() async throws {
        let token = "backend-token-never-shown-42"
        let reporter = CollectingReporter()
        let reader = try await ServerConfigurationSource.reader(
            environment: ["ATTESTKIT_BACKEND_TOKENS": token], accessReporter: reporter)
        #expect(try ServerConfiguration(reader: reader).backendTokens == [token])
        var printed = [String(describing: reader), String(reflecting: reader)]
        printed += reporter.events.map(\.description)
        printed += reporter.events.flatMap { event in event.providerResults.map { "\($0.providerName) \($0.result)" } }
        #expect(printed.contains { $0.contains("REDACTED") })
        #expect(printed.allSatisfy { !$0.contains(token) })
    }
}

@Suite("Route groups in the configuration")
struct EnforcementGroupsConfigurationTests {
    @Test("enforcement.groups from a file or the environment: NAME:MODE[:ROLLOUT[:MINIMUM-TRUST]] over enforcement.*")
    func reads() async throws {
        let entries = ["payments:enforce", "feed:report", "beta:enforce:0.25:devicecheck", "legacy:off:1:debug"]
        let file = try TemporaryFile(
            json: #"{"enforcement": {"rollout-salt": "s1", "groups": ["#
                + entries.map { "\"\($0)\"" }.joined(separator: ", ")
                + "]}}")
        let fromFile = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        let fromEnvironment = try await ServerConfigurationSource.load(
            environment: [
                "ATTESTKIT_ENFORCEMENT_ROLLOUT_SALT": "s1",
                "ATTESTKIT_ENFORCEMENT_GROUPS": entries.joined(separator: ","),
            ])
        for loaded in [fromFile, fromEnvironment] {
            let groups = loaded.enforcementGroups
            #expect(groups.keys.sorted() == ["beta", "feed", "legacy", "payments"])
            #expect(groups["payments"] == .init(mode: .enforce, rolloutSalt: "s1"))
            #expect(groups["feed"] == .init(mode: .report, rolloutSalt: "s1"))
            #expect(
                groups["beta"] == .init(mode: .enforce, rollout: 0.25, rolloutSalt: "s1", minimumTrust: .deviceCheck))
            #expect(groups["legacy"] == .init(mode: .off, rolloutSalt: "s1", minimumTrust: .debug))
            // The service decides under them: the decision route names them.
            var configuration = loaded
            configuration.appIDs = [Fixture.appID]
            let server = try AttestKitServer(
                configuration: configuration, store: MemoryAttestationStore(), logger: ServerHarness.silent)
            #expect(server.application.groupNames == ["beta", "default", "feed", "legacy", "payments"])
        }
    }

    static let malformed = [
        "payments", "payments:", "a:enforce:1:debug:x", "default:report", "payments:enforce,payments:report",
        "payments:warn", "payments:enforce:1.5", "payments:enforce:-0.1", "payments:enforce:nan",
        "payments:enforce:half", "payments:enforce:1:high", "Payments:enforce", "pay ments:enforce", ":enforce",
        String(repeating: "g", count: 65) + ":enforce",
    ]

    @Test("a malformed entry is refused naming enforcement.groups", arguments: malformed)
    func refused(_ entry: String) async throws {
        let error = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(environment: ["ATTESTKIT_ENFORCEMENT_GROUPS": entry])
        }
        #expect(error?.key == "enforcement.groups", "\(entry): \(String(describing: error))")
    }
}
