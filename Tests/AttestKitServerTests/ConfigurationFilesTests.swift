import AttestKitFlows
import AttestKit
import AttestKitServer
import Configuration
import Foundation
import Logging
import Testing

/// The configuration as containers and operators hand it over: a YAML file like the JSON one, and secrets mounted
/// as one file per setting, both read with swift-configuration's own providers.
@Suite("YAML configuration files and secrets directories")
struct ConfigurationFilesTests {
    static let adminToken = "admin-token-from-a-mounted-file-0123"

    /// A directory in the temporary directory with `files`, removed by the caller.
    static func directory(_ files: [String: String]) throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, contents) in files {
            try contents.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        return directory
    }

    @Test("A YAML file nests keys like the JSON file, lists are sequences")
    func yamlFile() async throws {
        let file = try TemporaryFile(
            contents: """
                http:
                  port: 8085
                  host: 0.0.0.0
                apps:
                  - ABCDE12345.com.example.app
                  - ABCDE12345.com.example.clip
                rate-limit:
                  challenges-per-ip: 7
                log:
                  level: debug
                """, extension: "yaml")
        let loaded = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        #expect(loaded.port == 8_085 && loaded.host == "0.0.0.0" && loaded.logLevel == .debug)
        #expect(loaded.appIDs.map(\.description) == ["ABCDE12345.com.example.app", "ABCDE12345.com.example.clip"])
        #expect(loaded.rateLimits.challengesPerIP == 7)

        let overridden = try await ServerConfigurationSource.load(
            environment: ["ATTESTKIT_HTTP_PORT": "8086"], file: file.path)
        #expect(overridden.port == 8_086 && overridden.host == "0.0.0.0")
    }

    @Test(
        "A YAML file with an unknown key, a boolean or no mapping is refused, naming the key",
        arguments: [
            ("http:\n  prot: 8080\n", "http.prot"), ("http:\n  port: true\n", "http.port"),
            ("- a\n- b\n", "config-file"), ("http: [unclosed\n", "config-file"),
        ])
    func yamlRefusals(contents: String, key: String) async throws {
        let file = try TemporaryFile(contents: contents, extension: "yml")
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        } throws: { error in
            (error as? ServerConfigurationError)?.key == key
        }
    }

    @Test("A secrets directory gives each setting a file; values are secrets, below the environment")
    func secretsDirectory() async throws {
        let directory = try Self.directory([
            "admin-token": Self.adminToken + "\n",
            "backend-tokens": "backend-token-0123456789,backend-token-abcdefghij",
            "storage-url": "memory:", ".hidden": "ignored",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        let reporter = CollectingReporter()
        let reader = try await ServerConfigurationSource.reader(
            environment: [:], secretsDirectory: directory.path, accessReporter: reporter)
        let loaded = try ServerConfiguration(reader: reader)
        #expect(loaded.adminToken == Self.adminToken)
        #expect(loaded.backendTokens == ["backend-token-0123456789", "backend-token-abcdefghij"])
        #expect(loaded.storageURL == "memory:")
        let printed = reporter.events.map(\.description) + [String(describing: reader)]
        #expect(printed.allSatisfy { !$0.contains(Self.adminToken) })

        // The environment names the directory too, and a variable still wins over a file.
        let environment = [
            "ATTESTKIT_SECRETS_DIR": directory.path, "ATTESTKIT_STORAGE_URL": "sqlite:attestkit-data/a.sqlite",
        ]
        let layered = try await ServerConfigurationSource.load(environment: environment)
        #expect(layered.adminToken == Self.adminToken && layered.storageURL == "sqlite:attestkit-data/a.sqlite")
    }

    @Test("A file that names no setting, or a missing directory, is refused")
    func secretsRefusals() async throws {
        let directory = try Self.directory(["admin_token": Self.adminToken])
        defer { try? FileManager.default.removeItem(at: directory) }
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], secretsDirectory: directory.path)
        } throws: { error in
            guard let error = error as? ServerConfigurationError else { return false }
            return error.key == "secrets-dir" && error.reason.contains("admin_token")
                && !error.reason.contains(Self.adminToken)
        }
        await #expect {
            _ = try await ServerConfigurationSource.load(
                environment: [:], secretsDirectory: directory.appendingPathComponent("absent").path)
        } throws: { error in
            (error as? ServerConfigurationError)?.key == "secrets-dir"
        }
    }
}
