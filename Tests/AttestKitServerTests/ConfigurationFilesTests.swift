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

    /// A directory laid out as Kubernetes mounts a Secret (its atomic writer): the files in a hidden timestamped
    /// directory, `..data` a link to it, and each key a link through `..data`. Removed by the caller.
    static func kubernetesDirectory(_ files: [String: String], timestamp: String = "..2026_11_27_10_00_00.123456789")
        throws -> URL
    {
        let directory = try Self.directory([:])
        try Self.kubernetesUpdate(directory, files, timestamp: timestamp)
        for name in files.keys {
            try FileManager.default.createSymbolicLink(
                atPath: directory.appendingPathComponent(name).path, withDestinationPath: "..data/\(name)")
        }
        return directory
    }

    /// Writes `files` to a new timestamped directory and points `..data` at it, as the kubelet updates a Secret.
    static func kubernetesUpdate(_ directory: URL, _ files: [String: String], timestamp: String) throws {
        let data = directory.appendingPathComponent(timestamp)
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        for (name, contents) in files {
            try contents.write(to: data.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let link = directory.appendingPathComponent("..data")
        try? FileManager.default.removeItem(at: link)
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: timestamp)
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
            // One setting both nested and dotted: the provider would keep one and drop the other unsaid.
            ("enforcement.mode: enforce\nenforcement:\n  mode: \"off\"\n", "enforcement.mode"),
        ])
    func yamlRefusals(contents: String, key: String) async throws {
        let file = try TemporaryFile(contents: contents, extension: "yml")
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        } throws: { error in
            (error as? ServerConfigurationError)?.key == key
        }
    }

    @Test("A JSON file giving one setting both nested and dotted is refused, naming it")
    func jsonNestedAndDotted() async throws {
        let file = try TemporaryFile(
            contents: #"{"enforcement.mode": "enforce", "enforcement": {"mode": "off"}}"#, extension: "json")
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        } throws: { error in
            (error as? ServerConfigurationError)?.key == "enforcement.mode"
                && (error as? ServerConfigurationError)?.description.contains("given twice") == true
        }
    }

    @Test("In YAML the documented values off and on are text, as in JSON and the environment; true and false are not")
    func yamlOffAndOn() async throws {
        let file = try TemporaryFile(contents: "background:\n  jobs: off\nenforcement:\n  mode: off\n", extension: "yml")
        let loaded = try await ServerConfigurationSource.load(environment: [:], file: file.path)
        #expect(!loaded.runsBackgroundJobs)
        let quoted = try TemporaryFile(contents: "background:\n  jobs: \"off\"\n", extension: "yaml")
        #expect(try await !ServerConfigurationSource.load(environment: [:], file: quoted.path).runsBackgroundJobs)
        let boolean = try TemporaryFile(contents: "background:\n  jobs: false\n", extension: "yml")
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], file: boolean.path)
        } throws: { error in
            (error as? ServerConfigurationError)?.key == "background.jobs"
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

    @Test("A secrets directory mounted as Kubernetes mounts a Secret (links through ..data) is read fully, and secret")
    func kubernetesSecretsDirectory() async throws {
        let directory = try Self.kubernetesDirectory([
            "admin-token": Self.adminToken + "\n",
            "backend-tokens": "backend-token-0123456789,backend-token-abcdefghij",
            "storage-url": "postgres://attestkit@db.internal:5432/attestkit",
            "storage-password": "database-password-from-a-secret",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        let reporter = CollectingReporter()
        let reader = try await ServerConfigurationSource.reader(
            environment: [:], secretsDirectory: directory.path, accessReporter: reporter)
        let loaded = try ServerConfiguration(reader: reader)
        #expect(loaded.adminToken == Self.adminToken)
        #expect(loaded.backendTokens == ["backend-token-0123456789", "backend-token-abcdefghij"])
        #expect(loaded.storageURL == "postgres://attestkit@db.internal:5432/attestkit")
        #expect(loaded.storagePassword == "database-password-from-a-secret")
        let printed = reporter.events.map(\.description) + [String(describing: reader), String(reflecting: reader)]
        for secret in [Self.adminToken, "backend-token-0123456789", "database-password-from-a-secret"] {
            #expect(printed.allSatisfy { !$0.contains(secret) }, "\(secret) printed")
        }

        // The kubelet's update (a new timestamped directory, ..data swapped) is what the next start reads.
        try Self.kubernetesUpdate(
            directory,
            [
                "admin-token": Self.adminToken + "-rotated", "backend-tokens": "backend-token-0123456789",
                "storage-url": "postgres://attestkit@db2.internal:5432/attestkit", "storage-password": "rotated",
            ],
            timestamp: "..2026_11_28_10_00_00.987654321")
        let updated = try await ServerConfigurationSource.load(environment: [:], secretsDirectory: directory.path)
        #expect(updated.adminToken == Self.adminToken + "-rotated" && updated.storagePassword == "rotated")
    }

    @Test("admin token rotation: the secrets directory's admin-previous-tokens, read again at the next start")
    func adminPreviousTokensFile() async throws {
        let previous = "previous-admin-token-from-a-file-0"
        let directory = try Self.kubernetesDirectory([
            "admin-token": Self.adminToken + "-next\n", "admin-previous-tokens": previous + "\n",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        let reporter = CollectingReporter()
        let reader = try await ServerConfigurationSource.reader(
            environment: [:], secretsDirectory: directory.path, accessReporter: reporter)
        let loaded = try ServerConfiguration(reader: reader)
        #expect(loaded.adminToken == Self.adminToken + "-next" && loaded.adminPreviousTokens == [previous])
        let printed = reporter.events.map(\.description) + [String(describing: reader), String(reflecting: reader)]
        #expect(printed.allSatisfy { !$0.contains(previous) })

        // The rotation's last roll: the kubelet's update empties the file, and the next start reads no previous
        // token (as it reads a new admin-token).
        try Self.kubernetesUpdate(
            directory, ["admin-token": Self.adminToken + "-next", "admin-previous-tokens": ""],
            timestamp: "..2026_11_28_10_00_00.987654321")
        let updated = try await ServerConfigurationSource.load(environment: [:], secretsDirectory: directory.path)
        #expect(updated.adminToken == Self.adminToken + "-next" && updated.adminPreviousTokens.isEmpty)

        // Previous tokens without the admin token stop the start, naming the setting.
        try FileManager.default.removeItem(at: directory.appendingPathComponent("admin-token"))
        try Self.kubernetesUpdate(
            directory, ["admin-previous-tokens": previous], timestamp: "..2026_11_29_10_00_00.000000001")
        let error = await #expect(throws: ServerConfigurationError.self) {
            try await ServerConfigurationSource.load(environment: [:], secretsDirectory: directory.path)
        }
        #expect(error?.key == "admin.previous-tokens" && error?.reason.contains(previous) == false)
    }

    @Test("Plain files give typed settings as the environment does; hidden entries are skipped, dangling or not")
    func plainSecretsDirectory() async throws {
        let directory = try Self.directory([
            "admin-token": "  \(Self.adminToken)\t\n", "http-port": "8087\n",
            "apps": "ABCDE12345.com.example.app, ABCDE12345.com.example.clip", ".hidden": "ignored",
        ])
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent(".dangling").path, withDestinationPath: "nowhere")
        let loaded = try await ServerConfigurationSource.load(environment: [:], secretsDirectory: directory.path)
        #expect(loaded.adminToken == Self.adminToken && loaded.port == 8_087)
        #expect(loaded.appIDs.map(\.description) == ["ABCDE12345.com.example.app", "ABCDE12345.com.example.clip"])
    }

    /// An entry of a secrets directory the server must refuse at start, and how to make it.
    struct Unreadable: CustomTestStringConvertible, Sendable {
        let testDescription: String
        /// The name of the entry the refusal names.
        let name: String
        /// What the refusal says.
        let reason: String
        /// Makes the entry in the directory (which holds `target`, a regular file, and `folder/`, a directory).
        let make: @Sendable (URL) throws -> Void

        static func link(_ name: String, to destination: String) -> @Sendable (URL) throws -> Void {
            { directory in
                try FileManager.default.createSymbolicLink(
                    atPath: directory.appendingPathComponent(name).path, withDestinationPath: destination)
            }
        }

        static let all: [Unreadable] = [
            Unreadable(
                testDescription: "a dangling link", name: "admin-token", reason: "symbolic link to nothing",
                make: link("admin-token", to: "..data/admin-token")),
            Unreadable(
                testDescription: "a link to a directory", name: "admin-token", reason: "directory",
                make: link("admin-token", to: "..folder")),
            Unreadable(
                testDescription: "a directory", name: "admin-token", reason: "directory",
                make: { directory in
                    try FileManager.default.createDirectory(
                        at: directory.appendingPathComponent("admin-token"), withIntermediateDirectories: false)
                }),
            Unreadable(
                testDescription: "a link out of the directory", name: "admin-token", reason: "outside",
                make: { directory in
                    let outside = directory.deletingLastPathComponent().appendingPathComponent(
                        "outside-\(directory.lastPathComponent)")
                    try ConfigurationFilesTests.secretText.write(to: outside, atomically: true, encoding: .utf8)
                    try link("admin-token", to: outside.path)(directory)
                }),
            Unreadable(
                testDescription: "a loop of links", name: "admin-token", reason: "loop",
                make: { directory in
                    try link("admin-token", to: "..loop")(directory)
                    try link("..loop", to: "admin-token")(directory)
                }),
            Unreadable(
                testDescription: "a named pipe", name: "admin-token", reason: "special file",
                make: { directory in
                    guard mkfifo(directory.appendingPathComponent("..pipe").path, 0o600) == 0 else {
                        throw CocoaError(.fileWriteUnknown)
                    }
                    try link("admin-token", to: "..pipe")(directory)
                }),
            Unreadable(
                testDescription: "a file over 64 KiB", name: "backend-tokens", reason: "larger than 65536 bytes",
                make: { directory in
                    let big = String(repeating: ConfigurationFilesTests.secretText + ",", count: 2_000)
                    try big.write(to: directory.appendingPathComponent("..big"), atomically: true, encoding: .utf8)
                    try link("backend-tokens", to: "..big")(directory)
                }),
            Unreadable(
                testDescription: "a link named after no setting", name: "admin_token", reason: "names no setting",
                make: link("admin_token", to: "..target")),
        ]
    }

    /// The text of the files the refusals must never repeat.
    static let secretText = "hunter2-secret-file-content-0123456789"

    @Test(
        "An entry that is not a readable file is refused at start, naming it and never its content",
        .timeLimit(.minutes(1)), arguments: Unreadable.all)
    func unreadableSecrets(entry: Unreadable) async throws {
        let directory = try Self.directory(["..target": Self.secretText])
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(
            at: directory.appendingPathComponent("..folder"), withIntermediateDirectories: false)
        try entry.make(directory)
        let outside = directory.deletingLastPathComponent().appendingPathComponent(
            "outside-\(directory.lastPathComponent)")
        defer { try? FileManager.default.removeItem(at: outside) }
        await #expect {
            _ = try await ServerConfigurationSource.load(environment: [:], secretsDirectory: directory.path)
        } throws: { error in
            guard let error = error as? ServerConfigurationError else { return false }
            return error.key == "secrets-dir" && error.reason.contains("\(directory.path)/\(entry.name)'")
                && error.reason.contains(entry.reason) && !error.description.contains(Self.secretText)
        }
    }
}
