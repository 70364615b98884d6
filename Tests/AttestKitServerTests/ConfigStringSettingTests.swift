import AttestKitFlows
import AttestKit
import Configuration
import Foundation
import Testing

@testable import AttestKitServer

/// App IDs, networks, environments and Apple's URLs are read through swift-configuration's own conversion
/// (`ExpressibleByConfigString`), and a bad one still fails naming the key and why, whichever source gave it.
@Suite("Settings converted by swift-configuration")
struct ConfigStringSettingTests {
    @Test("the types convert through ExpressibleByConfigString, with the reader's typed accessors")
    func conversions() throws {
        let reader = ConfigReader(
            provider: InMemoryProvider(values: [
                "apps": .init(.stringArray(["ABCDE12345.com.example.app"]), isSecret: false),
                "proxies": .init(.stringArray(["10.0.0.0/8", "2001:db8::/32"]), isSecret: false),
                "environments": "both",
                "url": "https://api.devicecheck.apple.com",
            ]))
        #expect(reader.stringArray(forKey: "apps", as: AppID.self) == [try AppID("ABCDE12345.com.example.app")])
        #expect(
            reader.stringArray(forKey: "proxies", as: IPNetwork.self)?.map(\.description) == [
                "10.0.0.0/8", "2001:db8:0:0:0:0:0:0/32",
            ])
        #expect(reader.string(forKey: "environments", as: EnvironmentPolicy.self) == .both)
        #expect(reader.string(forKey: "url", as: WebURL.self)?.text == "https://api.devicecheck.apple.com")
        #expect(AppID(configString: "com.example.app") == nil, "a bundle id without its Team ID")
        #expect(IPNetwork(configString: "10.0.0.0/33") == nil)
        #expect(EnvironmentPolicy(configString: "production+development") == nil)
        #expect(WebURL(configString: "ftp://example.com") == nil)
        #expect(WebURL(configString: "https://") == nil)
    }

    /// A bad value in one source, the key the error names and what its reason says.
    struct Refusal: Sendable, CustomTestStringConvertible {
        var flags: [String: ConfigValue] = [:]
        var environment: [String: String] = [:]
        var json: String?
        var key: String
        var reason: String
        var testDescription: String { "\(key): \(flags) \(environment) \(json ?? "")" }
    }

    static let notAnAppID = "holds 'com.example.app', which is not an App ID: an App ID starts with your 10-character"
    static let notANetwork = "holds an entry that is not an IP address or CIDR network"

    static let refusals: [Refusal] = [
        Refusal(flags: ["apps": "ABCDE12345.com.example.app,com.example.app"], key: "apps", reason: notAnAppID),
        Refusal(
            flags: ["apps": .init(.stringArray(["ABCDE12345.com.example.app", "com.example.app"]), isSecret: false)],
            key: "apps", reason: notAnAppID),
        Refusal(environment: ["ATTESTKIT_APPS": "com.example.app"], key: "apps", reason: notAnAppID),
        Refusal(json: #"{"apps": ["com.example.app"]}"#, key: "apps", reason: notAnAppID),
        Refusal(json: #"{"apps": "ABCDE12345.com.example.app, com.example.app"}"#, key: "apps", reason: notAnAppID),
        Refusal(json: #"{"apps": [1, 2]}"#, key: "apps", reason: "is not a list of strings"),
        Refusal(
            flags: ["http.trusted-proxies": "10.0.0.0/8,proxy.example"], key: "http.trusted-proxies",
            reason: notANetwork),
        Refusal(
            environment: ["ATTESTKIT_HTTP_TRUSTED_PROXIES": "::1/129"], key: "http.trusted-proxies", reason: notANetwork
        ),
        Refusal(
            json: #"{"http": {"trusted-proxies": ["10.0.0.0/8", "10.0.0.0/33"]}}"#, key: "http.trusted-proxies",
            reason: notANetwork),
        Refusal(flags: ["environments": "staging"], key: "environments", reason: "is production, development or both"),
        Refusal(
            json: #"{"environments": "production+development"}"#, key: "environments",
            reason: "is production, development or both"),
        Refusal(
            flags: ["apple.devicecheck-url": "https://"], key: "apple.devicecheck-url",
            reason: "is an http or https URL"),
        Refusal(
            environment: ["ATTESTKIT_APPLE_RECEIPT_URL": "not a url"], key: "apple.receipt-url",
            reason: "is an http or https URL"),
        Refusal(
            json: #"{"apple": {"receipt-url": "ftp://example.com"}}"#, key: "apple.receipt-url",
            reason: "is an http or https URL"),
        Refusal(json: #"{"apple": {"devicecheck-url": 8}}"#, key: "apple.devicecheck-url", reason: "is not a string"),
    ]

    @Test(
        "a bad App ID, network, environment or URL fails naming the key and why, from each source", arguments: refusals)
    func refused(_ refusal: Refusal) async throws {
        let file = try refusal.json.map { try TemporaryFile(json: $0) }
        let error = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(
                flags: refusal.flags, environment: refusal.environment, file: file?.path)
        }
        #expect(error?.key == refusal.key)
        #expect(error?.reason.hasPrefix(refusal.reason) == true, "\(error?.reason ?? "")")
    }

    @Test("good values from each source: an array, a comma-separated string with spaces, a flag")
    func accepted() async throws {
        let file = try TemporaryFile(
            json: #"{"apps": ["ABCDE12345.com.example.app"], "http": {"trusted-proxies": "10.0.0.0/8, ::1"}}"#)
        let fromFile = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        #expect(fromFile.appIDs == [try AppID("ABCDE12345.com.example.app")])
        #expect(fromFile.trustedProxies.map(\.description) == ["10.0.0.0/8", "0:0:0:0:0:0:0:1/128"])
        let fromEnvironment = try await ServerConfigurationSource.load(
            environment: [
                "ATTESTKIT_APPS": "ABCDE12345.com.example.app, FGHIJ67890.com.example.other",
                "ATTESTKIT_ENVIRONMENTS": "both",
            ])
        #expect(fromEnvironment.appIDs.count == 2 && fromEnvironment.environments == .both)
        let fromFlags = try await ServerConfigurationSource.load(
            flags: ["http.trusted-proxies": "192.0.2.1", "environments": "development"], environment: [:])
        #expect(fromFlags.trustedProxies.map(\.description) == ["192.0.2.1/32"])
        #expect(fromFlags.environments == .development)
    }
}
