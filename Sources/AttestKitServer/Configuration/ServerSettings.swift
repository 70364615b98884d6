/// One setting of `attestkit serve`: the single place a key is spelled.
///
/// ``ServerSetting/all`` is the table of every setting. The keys ``ServerConfigurationSource`` accepts
/// (``ServerConfiguration/configurationKeys``), the keys read as secrets (``ServerConfiguration/secretKeys``,
/// ``StrictConfigReader``) and environment variable names derive from it; tests check that ``ServerConfiguration``
/// reads exactly its keys with its types, and that the table of ``ServerConfiguration/init(reader:)`` and the one of
/// docs/service.md list its keys, variables and secrets.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
struct ServerSetting: Sendable, Hashable {
    /// How a value is read: the ``StrictConfigReader`` getter of the setting.
    enum ValueType: String, Sendable, Hashable {
        /// A string (``StrictConfigReader/string(_:)``): also paths, URLs and names parsed after reading.
        case string
        /// An integer (``StrictConfigReader/int(_:)``).
        case integer
        /// A finite number (``StrictConfigReader/double(_:)``): also durations in seconds.
        case number
        /// A list of strings (``StrictConfigReader/strings(_:)``).
        case strings
        /// A list of integers (``StrictConfigReader/ints(_:)``).
        case integers
        /// One of the values of a string enumeration (``StrictConfigReader/choice(_:as:)``).
        case choice
    }

    /// The dotted key (`http.port`).
    let key: String
    /// How the value is read.
    let type: ValueType
    /// The default as written in the documentation, or `nil` when the setting has none (or one computed).
    let defaultValue: String?
    /// Whether the value is a secret in every layer: redacted by swift-configuration, refused on the command line.
    let isSecret: Bool
    /// One line for the documentation's table: the default and what the setting does.
    let documentation: String

    /// A setting of the table.
    init(_ key: String, _ type: ValueType, default defaultValue: String?, secret: Bool = false, _ documentation: String)
    {
        self.key = key
        self.type = type
        self.defaultValue = defaultValue
        self.isSecret = secret
        self.documentation = documentation
    }

    /// Where the setting applies: the first component of its key (`http`, `tokens`, `apps`).
    var section: String {
        String(key.prefix { $0 != "." })
    }

    /// The environment variable: `ATTESTKIT_` and the key upper-cased, with `.` and `-` as `_`.
    var environmentVariable: String {
        ServerConfigurationSource.environmentVariable(for: key)
    }

    /// The setting's row in the table of ``ServerConfiguration/init(reader:)``.
    var documentationRow: String {
        "| `\(key)`\(isSecret ? " (secret)" : "") | `\(environmentVariable)` | \(documentation) |"
    }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension ServerSetting {
    /// Every setting, in the order of the documentation's table.
    static let all: [ServerSetting] = [
        ServerSetting("http.host", .string, default: "127.0.0.1", "`127.0.0.1`"),
        ServerSetting("http.port", .integer, default: "8080", "`8080` (0 picks a free port)"),
        ServerSetting("http.body-limit", .integer, default: "65536", "`65536` bytes"),
        ServerSetting("http.backend-host", .string, default: nil, "`http.host`, when `http.backend-port` is set"),
        ServerSetting(
            "http.backend-port", .integer, default: nil,
            "none: backend, operator and metrics routes on the one listener"),
        ServerSetting(
            "http.trusted-proxies", .strings, default: nil,
            "none: CIDR list whose forwarding header is believed"),
        ServerSetting(
            "http.client-address-header", .choice, default: "x-forwarded-for",
            "`x-forwarded-for` (or `forwarded`): the one header the proxies write"),
        ServerSetting("http.read-timeout", .number, default: "10", "`10` seconds to send a whole request"),
        ServerSetting(
            "http.idle-timeout", .number, default: "30",
            "`30` seconds between requests on a kept-alive connection"),
        ServerSetting(
            "http.max-connections", .integer, default: nil,
            "the descriptor limit minus a reserve (see ``DescriptorLimit``)"),
        ServerSetting(
            "shutdown.drain-period", .number, default: "5",
            "`5` seconds of draining after SIGTERM: `/ready` answers 503 `draining`, requests still served (0 to 3600)"),
        ServerSetting(
            "shutdown.grace-period", .number, default: "30",
            "`30` seconds at most for the whole shutdown, drain included (at least a second more than the drain "
                + "period)"),
        ServerSetting(
            "apps", .strings, default: nil,
            "none: `TEAMID.bundle.id` list; without one, attestations get 503"),
        ServerSetting("environments", .string, default: "production", "`production` (or `development`, `both`)"),
        ServerSetting(
            "storage.url", .string, default: "sqlite:attestkit-data/attestkit.sqlite", secret: true,
            "`sqlite:attestkit-data/attestkit.sqlite`; on the command line only without a password"),
        ServerSetting(
            "storage.password", .string, default: nil, secret: true,
            "none: the PostgreSQL password, for a `storage.url` without one"),
        ServerSetting(
            "storage.password-file", .string, default: nil,
            "none: a file holding the PostgreSQL password (one trailing newline dropped), instead of "
                + "`storage.password`"),
        ServerSetting("apple.key-file", .string, default: nil, "none: path of the `.p8` key"),
        ServerSetting("apple.key-id", .string, default: nil, "none"),
        ServerSetting("apple.team-id", .string, default: nil, "none"),
        ServerSetting("apple.devicecheck-environment", .choice, default: "production", "`production`"),
        ServerSetting(
            "apple.devicecheck-url", .string, default: nil,
            "Apple's, for the environment; another (a mock, for tests) refused by serve while production keys are "
                + "allowed"),
        ServerSetting(
            "apple.receipt-url", .string, default: nil,
            "Apple's, for the key's environment; another refused by serve while production keys are allowed"),
        ServerSetting("apple.timeout", .number, default: "15", "`15` seconds (0.001 to 600)"),
        ServerSetting("trust.attestation-root", .string, default: nil, "Apple's root; a PEM path, for tests"),
        ServerSetting("trust.receipt-root", .string, default: nil, "Apple's root; a PEM path, for tests"),
        ServerSetting("challenge.ttl", .number, default: "300", "`300` seconds"),
        ServerSetting("leeway", .number, default: "60", "`60` seconds"),
        ServerSetting("assertion.timestamp-window", .number, default: "300", "`300` seconds"),
        ServerSetting(
            "policy.validation-categories", .strings, default: nil,
            "any: names (`app-store`, `testflight`, `development`, `enterprise`, …) or numbers, and `unreported`"),
        ServerSetting("policy.minimum-os-version", .string, default: nil, "any: dotted, such as `17.4`"),
        ServerSetting(
            "policy.macos-app-ids", .strings, default: nil,
            "none: App IDs of macOS apps, whose keys must carry Apple's macOS access policy; an empty list is "
                + "refused (leave it out)"),
        ServerSetting(
            "policy.minimum-bundle-version", .string, default: nil,
            "any: dot-separated integers, such as `2.10.1`"),
        ServerSetting(
            "policy.validation-category-change", .choice, default: "refuse",
            "`refuse` (or `step-up`: accepted, asking for step-up; or `allow`: an assertion may report another "
                + "category than its key's attestation)"),
        ServerSetting("policy.risk-metric-threshold", .integer, default: nil, "none"),
        ServerSetting(
            "policy.unknown-risk", .choice, default: "allow",
            "`allow` (or `step-up`: step-up until Apple rated the key)"),
        ServerSetting("rate-limit.attestations-per-ip", .integer, default: "30", "`30` a minute (0: off)"),
        ServerSetting("rate-limit.attestations-per-app", .integer, default: "6000", "`6000` a minute (0: off)"),
        ServerSetting("rate-limit.challenges-per-ip", .integer, default: "120", "`120` a minute (0: off)"),
        ServerSetting(
            "ramp.share", .number, default: "100",
            "`100`: the percentage (0 to 100, decimals allowed) of each app's installs admitted to attest; below 100, "
                + "an attest challenge needs the key id (attestation ramp)"),
        ServerSetting(
            "ramp.daily-ceiling", .integer, default: "0",
            "`0`: none; new attestations per app per UTC day across every replica sharing the store (up to 1000000)"),
        ServerSetting(
            "ramp.recheck-after", .integer, default: "21600",
            "`21600` seconds an install outside the share is told to wait (`Retry-After`, 1 to 604800)"),
        ServerSetting(
            "devicecheck.states", .strings, default: nil,
            "none: `trial-and-ban`, or four names for bit0 bit1 = 00, 10, 01, 11"),
        ServerSetting("rate-limit.dashboard-logins-per-ip", .integer, default: "10", "`10` a minute (0: off)"),
        ServerSetting(
            "rate-limit.auth-failures-per-ip", .integer, default: "10",
            "`10` wrong credentials a minute, every credentialed route (0: off)"),
        ServerSetting(
            "rate-limit.ipv6-prefix-length", .integer, default: "64",
            "`64`: an IPv6 client counts by its /64 in every per-address budget (32 to 64; 56 or 48 where "
                + "subscribers hold a /56 or /48)"),
        ServerSetting("dashboard.session-lifetime", .number, default: "3600", "`3600` seconds (60 to 86400)"),
        ServerSetting(
            "debug.tokens", .strings, default: nil, secret: true,
            "none: comma-separated, each 32 to 256 bytes (ASCII characters), none a backend or admin token; "
                + "refused while production keys are allowed"),
        ServerSetting(
            "enforcement.mode", .choice, default: "enforce",
            "`enforce` (or `report`, `off`) for guarded route groups"),
        ServerSetting("enforcement.rollout", .number, default: "1", "`1`: the share of devices enforced, 0 to 1"),
        ServerSetting("enforcement.rollout-salt", .string, default: nil, "empty: mixed into the rollout hash"),
        ServerSetting(
            "enforcement.minimum-trust", .choice, default: "app_attest",
            "`app_attest` (or `devicecheck`, `debug`)"),
        ServerSetting(
            "enforcement.without-subject", .choice, default: "enforce",
            "`enforce` (or `report`): requests naming no rollout subject below a rollout of 1"),
        ServerSetting(
            "enforcement.groups", .strings, default: nil,
            "none: named route groups, each `NAME:MODE[:ROLLOUT[:MINIMUM-TRUST]]`"),
        ServerSetting(
            "devicecheck.cache-size", .integer, default: "10000",
            "`10000` DeviceCheck answers of the fallback"),
        ServerSetting("devicecheck.cache-ttl", .number, default: "600", "`600` seconds"),
        ServerSetting(
            "devicecheck.validations-per-client", .integer, default: "30",
            "`30` DeviceCheck validations of the fallback a minute per client address (0: off)"),
        ServerSetting(
            "admin.token", .string, default: nil, secret: true,
            "none: admin endpoints off; at least 16 bytes (ASCII characters)"),
        ServerSetting(
            "admin.previous-tokens", .strings, default: nil, secret: true,
            "none: admin tokens still accepted during a rotation, beside `admin.token` (which they need); "
                + "comma-separated, each at least 16 bytes (ASCII characters)"),
        ServerSetting(
            "backend.tokens", .strings, default: nil, secret: true,
            "none: backend routes off; comma-separated, each at least 16 bytes (ASCII characters)"),
        ServerSetting("log.level", .choice, default: "info", "`info` (`trace` … `critical`)"),
        ServerSetting(
            "log.format", .choice, default: "auto",
            "`auto`: text on a terminal, JSON otherwise (or `json`, `text`)"),
        ServerSetting("receipt-refresh.interval", .number, default: "60", "`60` seconds (0.01 to 86400)"),
        ServerSetting("receipt-refresh.batch", .integer, default: "100", "`100` keys"),
        ServerSetting(
            "receipt-refresh.lease", .number, default: "300",
            "`300` seconds a claimed key is kept from other replicas (1 to 86400, more than twice `apple.timeout`)"),
        ServerSetting(
            "receipt-refresh.active-within", .number, default: "2592000",
            "`2592000` seconds (30 days): only keys used within it have their receipts traded (60 to 10 years)"),
        ServerSetting(
            "keys.expire-after", .number, default: "0",
            "`0`: off; a key unused for longer (seconds) is refused with `key_expired` (1 to 10 years)"),
        ServerSetting(
            "receipt-refresh.concurrency", .integer, default: "8",
            "`8` receipt exchanges in flight at once per replica (1 to 64)"),
        ServerSetting(
            "receipt-refresh.max-per-second", .integer, default: "50",
            "`50` receipt exchanges a second across every replica sharing the store (0: no ceiling; up to 100000)"),
        ServerSetting("challenge-cleanup.interval", .number, default: "60", "`60` seconds (0.01 to 86400)"),
        ServerSetting(
            "background.jobs", .choice, default: "run",
            "`run` (or `off`: this replica runs no receipt refresh and no cleanup)"),
        ServerSetting(
            "storage.max-clock-skew", .number, default: "60",
            "`60` seconds off PostgreSQL's clock: `/ready` 503 `clock_skew`, jobs paused; "
                + "`0`: measured only (1 to 86400)"),
        ServerSetting(
            "storage.migrations", .choice, default: "apply",
            "`apply` the missing migrations at start (or `verify`: apply none, refuse a schema this release cannot run on)"
        ),
        ServerSetting(
            "tokens.signing-key-file", .string, default: nil,
            "none: token routes answer 503; a PEM P-256 private key"),
        ServerSetting(
            "tokens.previous-key-files", .strings, default: nil,
            "none: PEM keys still accepted and published after a rotation"),
        ServerSetting("tokens.issuer", .string, default: "attestkit", "`attestkit` (`iss`)"),
        ServerSetting("tokens.audience", .string, default: "attestkit", "`attestkit` (`aud`)"),
        ServerSetting("tokens.ttl", .number, default: "900", "`900` seconds (300 to 604800)"),
        ServerSetting(
            "tokens.device-tokens", .choice, default: "refuse",
            "`refuse` (or `accept`: `POST /v1/tokens` sells a token at trust `devicecheck` for a DeviceCheck "
                + "token, used up)"),
        ServerSetting("record.directory", .string, default: nil, "none: failed verifications are not recorded"),
        ServerSetting(
            "record.max-bundles", .integer, default: "1000",
            "`1000` bundles of known keys, oldest removed first"),
        ServerSetting(
            "record.max-bytes", .integer, default: "104857600",
            "`104857600` bytes (100 MiB) of known keys' bundles"),
        ServerSetting(
            "record.max-bundles-per-key", .integer, default: "10",
            "`10` bundles of one known key, its own oldest removed first (at most `record.max-bundles`)"),
        ServerSetting(
            "record.unknown-max-bundles", .integer, default: "100",
            "`100` bundles of unknown keys and malformed input (0: none)"),
        ServerSetting(
            "record.unknown-max-bytes", .integer, default: "10485760",
            "`10485760` bytes (10 MiB) of those bundles"),
        ServerSetting(
            "key-attestation.ca-certificate-file", .string, default: nil,
            "none: no app key certificates; a PEM CA certificate"),
        ServerSetting(
            "key-attestation.ca-key-file", .string, default: nil,
            "none; the CA certificate's PEM private key"),
        ServerSetting(
            "key-attestation.certificate-validity", .number, default: "3600",
            "`3600` seconds (300 to 2592000)"),
    ]

    /// The keys read as secrets.
    static let secretKeys: Set<String> = Set(all.filter(\.isSecret).map(\.key))
}
