import AsyncHTTPClient
import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTestSupport
import AttestKitTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// `attestkit` as a newcomer meets it: the version, a busy port and a mistyped App ID said in plain words.
@Suite struct ServeCommandLineTests {
    /// Runs the built `attestkit` with `arguments` and no `ATTESTKIT_*` variables but `environment`'s; standard
    /// output and error are captured together. Gives up (SIGKILL) after `limit`.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], limit: Duration = .seconds(60)
    ) async throws -> (status: Int32, output: String) {
        let binary = try #require(
            ServeProcess.binary, "build the attestkit executable first (swift build --build-tests)")
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: output) }
        let process = try ChildProcess(
            executable: binary.path, arguments: arguments,
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("ATTESTKIT_") }
                .merging(environment) { $1 },
            standardInput: .null, standardOutput: .file(output.path), standardError: .sameAsOutput)
        let start = ContinuousClock.now
        while process.isRunning {
            if start.duration(to: .now) > limit {
                process.signal(SIGKILL)
                process.waitUntilExit()
                Issue.record("attestkit \(arguments) did not exit within \(limit)")
                break
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return (process.waitUntilExit().status, try String(contentsOf: output, encoding: .utf8))
    }

    @Test("attestkit migrate applies the migrations once and reports them; serve with storage.migrations=verify needs it")
    func migrate() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("migrate-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let storage = "sqlite:" + directory.appendingPathComponent("store.sqlite").path

        // A server that does not migrate refuses a database nobody migrated, naming the command.
        let refused = try await Self.run([
            "serve", "--port", "0", "--storage", storage, "--set", "storage.migrations=verify",
        ])
        #expect(refused.status != 0)
        #expect(refused.output.contains("run `attestkit migrate`"), "\(refused.output)")

        let first = try await Self.run(["migrate", "--storage", storage])
        #expect(first.status == 0, "\(first.output)")
        #expect(first.output.contains("schema version 10 (was 0; this release knows 10)"), "\(first.output)")
        let again = try await Self.run(["migrate", "--storage", storage], environment: ["ATTESTKIT_LOG_LEVEL": "error"])
        #expect(again.output.contains("schema version 10 (was 10; this release knows 10)"), "\(again.output)")

        // A misspelt storage variable would migrate the default storage instead: migrate names it, as serve does.
        let misspelt = try await Self.run(
            ["migrate", "--storage", storage], environment: ["ATTESTKIT_STORAGE_ULR": "postgres://u@db.invalid/a"])
        #expect(misspelt.output.contains("names no setting and is ignored"), "\(misspelt.output)")
        #expect(misspelt.output.contains("ATTESTKIT_STORAGE_URL"), "\(misspelt.output)")
        #expect(!misspelt.output.contains("db.invalid"), "\(misspelt.output)")

        // A password on the command line is refused, as by serve.
        let secret = try await Self.run(["migrate", "--storage", "postgres://u:secret@127.0.0.1:1/db"])
        #expect(secret.status != 0 && !secret.output.contains("schema version"), "\(secret.output)")
    }

    @Test(
        "load --population seeds a PostgreSQL store with the password from ATTESTKIT_STORAGE_PASSWORD, as serve reads it",
        .enabled(if: ReplicaTests.postgresWanted, "PostgreSQL is not configured (run scripts/postgres)"))
    func populationWithThePasswordInTheEnvironment() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        let full = PostgresTestServer.storageURL(schemaPrefix: "loadpassword")
        let (storage, password) = ServerConfigurationSource.splitStoragePassword(full)
        let schema = try #require(URLComponents(string: full)?.queryItems?.first { $0.name == "schema" }?.value)
        let result = try await Self.run(
            [
                "load", "--population", "300", "--signable-keys", "50", "--keys", "1", "--requests", "50", "--json",
                "--storage", storage,
            ],
            environment: ["ATTESTKIT_STORAGE_PASSWORD": try #require(password)], limit: .seconds(600))
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("\"spreadShare\""), "\(result.output)")
        try await FleetTests.withStore(schema: schema) { store in try await store.dropSchema() }
    }

    @Test("attestkit --version prints the version")
    func version() async throws {
        let result = try await Self.run(["--version"])
        #expect(result.status == 0)
        let version = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            version.split(separator: ".").count == 3 && version.allSatisfy { $0.isNumber || $0 == "." }, "\(version)")
    }

    @Test("A port another program holds is refused in plain words, not with an errno")
    func busyPort() async throws {
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.app")
        let first = try ServeProcess(apple: apple, appID: appID)
        defer { first.stop() }
        let port = try await first.port()
        let second = try await Self.run([
            "serve", "--port", "\(port)", "--storage", "memory:", "--app", appID.description,
            "--log-level", "critical",
        ])
        #expect(second.status != 0)
        #expect(second.output.contains("cannot listen on 127.0.0.1:\(port)"), "\(second.output)")
        #expect(second.output.contains("already in use by another program"), "\(second.output)")
        #expect(!second.output.contains("errno"), "\(second.output)")

        // A misspelt ATTESTKIT_ variable is named in a warning at start (never its value), with the setting meant.
        let misspelt = try await Self.run(
            ["serve", "--port", "\(port)", "--storage", "memory:", "--app", appID.description],
            environment: ["ATTESTKIT_POLICY_VALIDATION_CATEGORY": "app-store-value"])
        #expect(misspelt.output.contains("names no setting and is ignored"), "\(misspelt.output)")
        #expect(misspelt.output.contains("ATTESTKIT_POLICY_VALIDATION_CATEGORIES"), "\(misspelt.output)")
        #expect(!misspelt.output.contains("app-store-value"), "\(misspelt.output)")
    }

    @Test(
        "bench refuses a duration that is not a number, not positive or past an hour, before measuring anything",
        arguments: [
            ["--seconds", "nan"], ["--seconds", "inf"], ["--seconds", "0"], ["--seconds", "1e300"],
            ["--storage", "--storage-seconds", "nan"], ["--storage", "--storage-seconds=-1"],
        ])
    func benchDurations(arguments: [String]) async throws {
        let result = try await Self.run(["bench"] + arguments)
        #expect(result.status == 64, "a usage error, not a trap: \(result.status) \(result.output)")
        #expect(result.output.contains("at most 3600 seconds"), "\(result.output)")
    }

    @Test(
        "An App ID without a 10-character Team ID is refused at start, saying what a Team ID is",
        arguments: ["com.example.app", "abcde12345.com.example.app", "ABCDE1234.com.example.app", "ABCDE12345"])
    func appIDWithoutTeamID(app: String) async throws {
        let result = try await Self.run(["serve", "--port", "0", "--storage", "memory:", "--app", app])
        #expect(result.status != 0)
        #expect(result.output.contains("apps"), "\(result.output)")
        #expect(result.output.contains("10-character Team ID") || app == "ABCDE12345", "\(result.output)")
        #expect(!result.output.contains("listening"), "\(result.output)")
    }

    @Test(
        "serve refuses every secret on its command line, the storage URL's password included, without echoing it",
        arguments: [
            ["--set", "debug.tokens=hunter2-debug-token-0123456789-0123456789"],
            ["--set", "admin.token=hunter2-admin-token-0123456789"],
            ["--set", "backend.tokens=hunter2-backend-token-0123456789"],
            ["--set", "storage.password=hunter2-password"],
            ["--storage", "postgres://attestkit:hunter2-password@127.0.0.1:5432/attestkit"],
            ["--set", "storage.url=postgres://attestkit:hunter2-password@127.0.0.1:5432/attestkit"],
        ])
    func secretsRefused(arguments: [String]) async throws {
        let storage = arguments.contains("--storage") ? [] : ["--storage", "memory:"]
        let result = try await Self.run(["serve", "--port", "0", "--environments", "development"] + storage + arguments)
        #expect(result.status != 0)
        #expect(!result.output.contains("listening"), "\(result.output)")
        #expect(!result.output.contains("hunter2"), "\(result.output)")
        #expect(result.output.contains("ATTESTKIT_"), "\(result.output)")
    }

    @Test("serve honours the admin token of a secrets directory mounted as Kubernetes mounts a Secret")
    func kubernetesSecretsDirectory() async throws {
        let token = ConfigurationFilesTests.adminToken
        let directory = try ConfigurationFilesTests.kubernetesDirectory(["admin-token": token + "\n"])
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = try ServeProcess(
            apple: try SoftwareApple(), appID: try AppID("ABCDE12345.com.example.app"),
            arguments: ["--secrets-dir", directory.path])
        defer { server.stop() }
        let base = try await server.baseURL().absoluteString
        let client = HTTPClient.shared
        func status(_ path: String, bearer: String) async throws -> UInt {
            var request = HTTPClientRequest(url: base + path)
            request.headers.add(name: "Authorization", value: "Bearer \(bearer)")
            let response = try await client.execute(request, timeout: .seconds(30))
            _ = try await response.body.collect(upTo: 1 << 20)
            return response.status.code
        }
        // Without the token the dashboard answers 503 admin_not_configured; with it, 200 to the token, 401 to another.
        #expect(try await status("/dashboard", bearer: token) == 200)
        #expect(try await status("/dashboard", bearer: token + "-wrong") == 401)

        // A dangling link in the same directory stops serve at start, naming the file.
        try FileManager.default.createSymbolicLink(
            atPath: directory.appendingPathComponent("backend-tokens").path,
            withDestinationPath: "..data/backend-tokens")
        let refused = try await Self.run([
            "serve", "--port", "0", "--storage", "memory:", "--secrets-dir", directory.path,
        ])
        #expect(refused.status != 0)
        #expect(refused.output.contains("backend-tokens' is a symbolic link to nothing"), "\(refused.output)")
        #expect(!refused.output.contains(token) && !refused.output.contains("listening"), "\(refused.output)")
    }

    @Test("simulate refuses the same App ID mistakes")
    func simulateAppID() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let result = try await Self.run([
            "simulate", "device", "--app-id", "com.example.app", "--environment", "development",
            "--state", directory.appendingPathComponent("device.json").path, "--out", directory.path,
        ])
        #expect(result.status != 0)
        #expect(result.output.contains("10-character Team ID"), "\(result.output)")
    }
}
