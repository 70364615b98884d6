import AttestKit
import AttestKitFlows
import AttestKitTesting
import Foundation
import Testing

@testable import AttestKitServer

/// Settings that loaded while they could not do what they say: a macOS App ID the policy never matches, a trusted
/// proxy network holding every address, a YAML file whose parser and provider read different settings (or trap),
/// an error naming the wrong key, and token lengths documented in characters while bytes are counted.
@Suite("Configuration strictness: settings that load but cannot work are refused")
struct ConfigurationStrictnessTests {
    /// The one app of the macOS tests.
    static let macApp = "ABCDE12345.com.example.mac"

    /// Loads `file`'s contents as a YAML file with no other source.
    static func loadYAML(_ contents: String) async throws -> ServerConfiguration {
        let file = try TemporaryFile(contents: contents, extension: "yaml")
        return try await ServerConfigurationSource.load(environment: [:], file: file.path)
    }

    /// Whether `error` is a ``ServerConfigurationError`` naming `key`.
    static func names(_ key: String) -> @Sendable (any Error) -> Bool {
        { ($0 as? ServerConfigurationError)?.key == key }
    }

    // MARK: policy.macos-app-ids

    @Test(
        "policy.macos-app-ids holds App IDs as strict as apps', each one of apps",
        arguments: ["com.example.mac", "abcde12345.com.example.mac", "ZZZZZ99999.com.example.mac"])
    func macOSAppIDRefused(value: String) async throws {
        await #expect {
            _ = try await ServerConfigurationSource.load(
                environment: ["ATTESTKIT_APPS": Self.macApp, "ATTESTKIT_POLICY_MACOS_APP_IDS": value])
        } throws: { Self.names("policy.macos-app-ids")($0) }
        let file = try TemporaryFile(
            json: #"{"apps": ["\#(Self.macApp)"], "policy": {"macos-app-ids": ["\#(value)"]}}"#)
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        } throws: { Self.names("policy.macos-app-ids")($0) }
    }

    @Test(
        "an empty policy.macos-app-ids over a file's list is refused: it would drop the macOS key policy",
        arguments: ["", ",", " , "])
    func macOSAppIDsEmptyRefused(value: String) async throws {
        let file = try TemporaryFile(
            json: #"{"apps": ["\#(Self.macApp)"], "policy": {"macos-app-ids": ["\#(Self.macApp)"]}}"#)
        await #expect {
            _ = try await ServerConfigurationSource.load(
                environment: ["ATTESTKIT_POLICY_MACOS_APP_IDS": value], file: file.path)
        } throws: { Self.names("policy.macos-app-ids")($0) }
        let empty = try TemporaryFile(json: #"{"apps": ["\#(Self.macApp)"], "policy": {"macos-app-ids": []}}"#)
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], file: empty.path)
        } throws: { Self.names("policy.macos-app-ids")($0) }
    }

    @Test("policy.macos-app-ids naming one of apps loads")
    func macOSAppIDLoads() async throws {
        let loaded = try await ServerConfigurationSource.load(
            environment: [
                "ATTESTKIT_APPS": "\(Self.macApp),ABCDE12345.com.example.ios",
                "ATTESTKIT_POLICY_MACOS_APP_IDS": Self.macApp,
            ])
        #expect(loaded.policy.macOSAppIDs == [try AppID(Self.macApp)])
    }

    // MARK: http.trusted-proxies

    @Test(
        "http.trusted-proxies refuses a network of every address (/0), which lets a client name its own address",
        arguments: ["0.0.0.0/0", "::/0", "10.0.0.0/8,::/0", "::ffff:0.0.0.0/96", "192.0.2.0/0"])
    func everyAddressRefused(value: String) async throws {
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: ["ATTESTKIT_HTTP_TRUSTED_PROXIES": value])
        } throws: { error in
            guard let error = error as? ServerConfigurationError else { return false }
            return error.key == "http.trusted-proxies" && error.reason.contains("every")
        }
    }

    @Test("A configuration built in code is refused too with a /0 proxy; narrower networks load")
    func everyAddressRefusedInCode() async throws {
        let loaded = try await ServerConfigurationSource.load(
            environment: ["ATTESTKIT_HTTP_TRUSTED_PROXIES": "10.0.0.0/8"])
        #expect(loaded.trustedProxies.map(\.description) == ["10.0.0.0/8"])
        let halves = try await ServerConfigurationSource.load(
            environment: ["ATTESTKIT_HTTP_TRUSTED_PROXIES": "0.0.0.0/1, 128.0.0.0/1, ::/1"])
        #expect(halves.trustedProxies.count == 3)
        var configuration = ServerConfiguration(appIDs: [], trustAnchors: try TrustAnchors.apple())
        configuration.trustedProxies = [try #require(IPNetwork("0.0.0.0/0"))]
        #expect(throws: ServerConfigurationError.self) { try configuration.validate() }
    }

    // MARK: devicecheck.cache-ttl

    @Test("A bad devicecheck.cache-ttl is reported under its own key, a bad cache-size under its own")
    func cacheTTLKey() async throws {
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: ["ATTESTKIT_DEVICECHECK_CACHE_TTL": "-1"])
        } throws: { Self.names("devicecheck.cache-ttl")($0) }
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: ["ATTESTKIT_DEVICECHECK_CACHE_TTL": "86401"])
        } throws: { Self.names("devicecheck.cache-ttl")($0) }
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: ["ATTESTKIT_DEVICECHECK_CACHE_SIZE": "0"])
        } throws: { Self.names("devicecheck.cache-size")($0) }
    }

    // MARK: Token lengths

    /// The settings whose values are bearer tokens of a least length.
    static let tokenKeys = ["admin.token", "admin.previous-tokens", "backend.tokens", "debug.tokens"]

    @Test("Token lengths are documented in bytes, as counted, in the table of settings and docs/service.md")
    func tokenLengthsInBytes() throws {
        /// What the lengths were written as: characters, which a token of other than ASCII has fewer of.
        func countsCharacters(_ text: some StringProtocol) -> Bool {
            ["16 characters", "256 characters"].contains { text.contains($0) }
        }
        for setting in ServerSetting.all where Self.tokenKeys.contains(setting.key) {
            #expect(setting.documentation.contains("bytes"), "\(setting.key)")
            #expect(!countsCharacters(setting.documentation), "\(setting.key)")
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let service = try String(contentsOf: root.appendingPathComponent("docs/service.md"), encoding: .utf8)
        for key in Self.tokenKeys {
            let row = try #require(service.split(separator: "\n").first { $0.hasPrefix("| `\(key)` ") })
            #expect(row.contains("bytes") && !countsCharacters(row), "\(row)")
        }
    }

    @Test("A token of 16 UTF-8 bytes in 8 characters is long enough; one of 15 bytes is refused, in bytes")
    func tokenLengthCountsBytes() async throws {
        let eightCharacters = String(repeating: "é", count: 8)
        let loaded = try await ServerConfigurationSource.load(environment: ["ATTESTKIT_ADMIN_TOKEN": eightCharacters])
        #expect(loaded.adminToken == eightCharacters)
        for (variable, key) in [
            ("ATTESTKIT_ADMIN_TOKEN", "admin.token"), ("ATTESTKIT_BACKEND_TOKENS", "backend.tokens"),
        ] {
            await #expect {
                _ = try await ServerConfigurationSource.load(environment: [variable: "fifteen-bytes!!"])
            } throws: { error in
                guard let error = error as? ServerConfigurationError else { return false }
                return error.key == key && error.reason.contains("16 bytes") && !error.reason.contains("16 characters")
            }
        }
    }

    // MARK: YAML files

    @Test(
        "A YAML file whose provider would read another setting than its check is refused, naming the key",
        arguments: [
            // A key twice in one mapping, or a section twice (the provider merges both, the check saw the last),
            // spelt with different tags: Yams' own check of duplicates compares tags too.
            ("http:\n  port: 8081\n  !custom port: 8082\n", "http.port"),
            ("rate-limit:\n  challenges-per-ipp: 5\n!custom rate-limit:\n  attestations-per-ip: 5\n", "rate-limit"),
            // Tags: `!!set` is a mapping the provider files under sub-keys nothing reads; the others are read as
            // their text, which is not what the tag says.
            ("policy:\n  validation-categories: !!set {app-store}\n", "policy.validation-categories"),
            ("policy:\n  validation-categories: !!set\n    ? app-store\n", "policy.validation-categories"),
            ("admin:\n  token: !!binary YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=\n", "admin.token"),
            ("policy: !!omap\n  - minimum-os-version: '17.4'\n", "policy"),
            ("http:\n  host: !custom 0.0.0.0\n", "http.host"),
            ("http:\n  host: !<tag:example.com,2026:host> 0.0.0.0\n", "http.host"),
            ("apps:\n  - !custom ABCDE12345.com.example.app\n", "apps"),
            ("!custom http:\n  port: 8081\n", "http"),
            // Anchors and aliases: refused, so a file never expands beyond what is written.
            ("http:\n  host: &h 0.0.0.0\n  backend-host: *h\n  backend-port: 9090\n", "config-file"),
            ("http: &h\n  port: 8081\n", "config-file"),
            // Lists hold text and numbers only.
            ("apps:\n  - [ABCDE12345.com.example.app]\n", "apps"),
        ])
    func yamlRefusals(contents: String, key: String) async throws {
        await #expect {
            _ = try await Self.loadYAML(contents)
        } throws: { Self.names(key)($0) }
    }

    @Test(
        "A key given twice in one YAML mapping, or a section given twice, is refused, naming the key",
        arguments: [
            ("http:\n  port: 8081\n  port: 8082\n", "port"),
            ("rate-limit:\n  challenges-per-ipp: 5\nrate-limit:\n  attestations-per-ip: 5\n", "rate-limit"),
            ("http:\n  host: 0.0.0.0\n  \"host\": 127.0.0.1\n", "host"),
        ])
    func yamlDuplicates(contents: String, name: String) async throws {
        await #expect {
            _ = try await Self.loadYAML(contents)
        } throws: { error in
            guard let error = error as? ServerConfigurationError else { return false }
            return error.key == "config-file" && error.reason.contains("'\(name)' twice")
        }
    }

    @Test(
        "A YAML file that made Yams trap (a complex key, a base-60 number beyond Int) is refused, not a crash",
        arguments: [
            ("? [a, b]\n: c\n", "config-file"),
            ("? {a: b}\n: c\n", "config-file"),
            ("http:\n  ? [port]\n  : 8081\n", "config-file"),
            ("http:\n  port: 1000000000000000000:0\n", "http.port"),
            ("http:\n  port: 9000000000000000000:99\n", "http.port"),
            ("http:\n  port: -9000000000000000000:99\n", "http.port"),
            ("http:\n  port: 1_000_000_000_000_000_000:0\n", "http.port"),
            ("http:\n  port: 1:2:3:4:5:6:7:8:9:10:11:12\n", "http.port"),
            ("policy:\n  validation-categories: [1:2:3:4:5:6:7:8:9:10:11:12]\n", "policy.validation-categories"),
            ("http:\n  host: 1000000000000000000:0\n", "http.host"),
        ])
    func yamlTraps(contents: String, key: String) async throws {
        await #expect {
            _ = try await Self.loadYAML(contents)
        } throws: { Self.names(key)($0) }
    }

    @Test(
        "A plain YAML scalar that YAML 1.1 reads as a base-60 number is refused (quote it), never misread",
        arguments: [
            ("leeway: 1:30\n", "leeway"), ("leeway: 1:30.5\n", "leeway"), ("http:\n  port: 1_3:20\n", "http.port"),
            ("http:\n  trusted-proxies:\n    - 1:2:3:4:5:6:7:8\n", "http.trusted-proxies"),
        ])
    func yamlBase60(contents: String, key: String) async throws {
        await #expect {
            _ = try await Self.loadYAML(contents)
        } throws: { Self.names(key)($0) }
    }

    @Test("Plain YAML still loads: core tags, quoted text with colons, IPv6 networks, groups, off")
    func yamlStillLoads() async throws {
        let loaded = try await Self.loadYAML(
            """
            http:
              host: !!str 0.0.0.0
              port: !!int 8081
              trusted-proxies:
                - 10.0.0.0/8
                - "2001:db8::/32"
                - 2001:db8:1::/48
                - ::1
                - "1:2:3:4:5:6:7:8"
            apps: !!seq
              - ABCDE12345.com.example.app
            policy: !!map
              minimum-os-version: "17.4"
              validation-categories: [app-store, 5]
            enforcement:
              groups:
                - checkout:enforce:0.5
                - "admin:off"
              rollout-salt: "1000000000000000000:0"
            background:
              jobs: off
            leeway: !!float 30
            """)
        #expect(loaded.host == "0.0.0.0" && loaded.port == 8_081)
        #expect(loaded.trustedProxies.count == 5)
        #expect(loaded.appIDs.map(\.description) == ["ABCDE12345.com.example.app"])
        #expect(loaded.policy.minimumOSVersion == "17.4")
        #expect(loaded.policy.allowedValidationCategories?.count == 2)
        #expect(loaded.enforcementGroups.count == 2)
        #expect(!loaded.runsBackgroundJobs && loaded.leeway == 30)
        #expect(loaded.enforcement.rolloutSalt == "1000000000000000000:0")
    }

    @Test("The YAML files the repository ships pass the file check and load in the provider")
    func shippedYAMLFilesPass() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let reference = root.appendingPathComponent("deploy/attestkit.yaml").path
        _ = try await ServerConfigurationSource.providers(environment: [:], file: reference)
        // The ConfigMap's attestkit.yaml, indented by 4 under `data:`.
        let configMap = try String(
            contentsOf: root.appendingPathComponent("deploy/kubernetes/configmap.yaml"), encoding: .utf8)
        let lines = configMap.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix("  attestkit.yaml: |") })
        let embedded = lines[(start + 1)...].prefix { $0.isEmpty || $0.hasPrefix("    ") }.map { $0.dropFirst(4) }
        let file = try TemporaryFile(contents: embedded.joined(separator: "\n"), extension: "yaml")
        let providers = try await ServerConfigurationSource.providers(environment: [:], file: file.path)
        #expect(providers.count == 3)
    }
}

extension ConfigurationStrictnessTests {
    @Test("a configuration built in code is refused too with a macOS App ID that is not among apps")
    func macOSAppIDRefusedInCode() throws {
        var configuration = AttestKitApplication.Configuration(
            appIDs: [try AppID(validating: Self.macApp)], environments: .development,
            trustAnchors: Fixture.apple.trustAnchors)
        configuration.policy.macOSAppIDs = [try AppID(validating: "ZZZZZ99999.com.example.mac")]
        #expect(throws: ConfigurationError.self) { try configuration.validate() }
        configuration.policy.macOSAppIDs = [try AppID(validating: Self.macApp)]
        try configuration.validate()
    }
}
