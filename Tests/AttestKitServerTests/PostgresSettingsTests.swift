import AsyncHTTPClient
import AttestKitServer
import AttestKitStore
import AttestKitTestSupport
import Configuration
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Testing

@testable import AttestKitServer

/// `storage.password-file`, and the start-up line that names the PostgreSQL pool without its password.
@Suite("PostgreSQL settings: password file and pool announcement")
struct PostgresSettingsTests {
    static let password = "pw-file-secret-0123456789"
    static let url = "postgres://attestkit@127.0.0.1:5432/attestkit"

    /// A file in a fresh directory holding `contents`, removed by the caller through the returned directory.
    static func file(_ contents: String) throws -> (directory: URL, path: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pwfile-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("password").path
        try Data(contents.utf8).write(to: URL(fileURLWithPath: path))
        return (directory, path)
    }

    @Test(
        "storage.password-file: the file's text, one trailing line break dropped; the path may be a flag",
        arguments: ["\(password)", "\(password)\n", "\(password)\r\n", "  \(password) \n"])
    func passwordFile(contents: String) async throws {
        let (directory, path) = try Self.file(contents)
        defer { try? FileManager.default.removeItem(at: directory) }
        let reader = try await ServerConfigurationSource.reader(
            flags: [
                "storage.url": ConfigValue(.string(Self.url), isSecret: false),
                "storage.password-file": ConfigValue(.string(path), isSecret: false),
            ],
            environment: [:])
        let configuration = try ServerConfiguration(reader: reader)
        // Surrounding spaces belong to the password: only the line break is the file's.
        let expected = contents.hasPrefix(" ") ? "  \(Self.password) " : Self.password
        #expect(configuration.storagePassword == expected)
        #expect(ServerConfigurationSource.commandLineRefusal(key: "storage.password-file", value: path) == nil)
        let postgres = try ServerConfiguration.postgresConfiguration(url: Self.url, password: expected)
        #expect(postgres?.password == expected)
    }

    @Test(
        "a password file that is missing, empty, or more than one line is refused without repeating it",
        arguments: ["missing", "", "\n", "\r\n", "\(password)\n\n", "\(password)\nsecond", "a\u{0}b", "a\tb"])
    func passwordFileRefused(contents: String) async throws {
        let (directory, path) = try Self.file(contents)
        defer { try? FileManager.default.removeItem(at: directory) }
        let filePath = contents == "missing" ? directory.appendingPathComponent("absent").path : path
        await #expect {
            _ = try await ServerConfigurationSource.load(
                environment: ["ATTESTKIT_STORAGE_URL": Self.url, "ATTESTKIT_STORAGE_PASSWORD_FILE": filePath])
        } throws: { error in
            guard let error = error as? ServerConfigurationError else { return false }
            return error.key == "storage.password-file" && !error.description.contains(Self.password)
                && error.description.contains(filePath)
        }
    }

    @Test("storage.password and storage.password-file together are refused")
    func bothRefused() async throws {
        let (directory, path) = try Self.file(Self.password)
        defer { try? FileManager.default.removeItem(at: directory) }
        await #expect {
            _ = try await ServerConfigurationSource.load(
                environment: [
                    "ATTESTKIT_STORAGE_URL": Self.url, "ATTESTKIT_STORAGE_PASSWORD": "other-secret",
                    "ATTESTKIT_STORAGE_PASSWORD_FILE": path,
                ])
        } throws: { error in
            guard let error = error as? ServerConfigurationError else { return false }
            return error.key == "storage.password-file" && !error.description.contains("other-secret")
                && !error.description.contains(Self.password)
        }
    }

    @Test(
        "a password file beside a SQLite URL or a URL with its own password is refused",
        arguments: ["sqlite:a.sqlite", "memory:", "postgres://attestkit:other@127.0.0.1/db"])
    func passwordFileBesideURL(url: String) async throws {
        let (directory, path) = try Self.file(Self.password)
        defer { try? FileManager.default.removeItem(at: directory) }
        await #expect(throws: ServerConfigurationError.self) {
            _ = try await ServerConfigurationSource.load(
                environment: ["ATTESTKIT_STORAGE_URL": url, "ATTESTKIT_STORAGE_PASSWORD_FILE": path])
        }
    }

    @Test("storage.url with an sslrootcert file that cannot be used is refused when the configuration is read")
    func unusableRootCertificate() async {
        let missing = "/nonexistent-\(UUID().uuidString)/ca.pem"
        await #expect {
            _ = try await ServerConfigurationSource.load(
                environment: ["ATTESTKIT_STORAGE_URL": "postgres://u@db.internal/db?sslrootcert=\(missing)"])
        } throws: { error in
            guard let error = error as? ServerConfigurationError else { return false }
            return error.key == "storage.url" && error.description.contains(missing)
        }
    }

    @Test("the pool line names host, port, database, schema, sslmode and pool size, never the password")
    func announcement() throws {
        let capture = LogCapture()
        let postgres = try #require(
            try ServerConfiguration.postgresConfiguration(
                url: "postgres://app@db.internal:6543/attest?schema=tenant&sslmode=verify-full&pool_max_conns=7",
                password: Self.password))
        ServerConfiguration.announce(postgres, logger: capture.logger())
        let line = try #require(capture.logged.first { $0.message == "PostgreSQL connection pool" })
        #expect(line.level == .info)
        #expect(line.metadata["pool_max_conns"] == "7")
        #expect(line.metadata["host"] == "db.internal" && line.metadata["port"] == "6543")
        #expect(line.metadata["database"] == "attest" && line.metadata["schema"] == "tenant")
        #expect(line.metadata["sslmode"] == "verify-full" && line.metadata["certificate_check"] == "chain and host")
        #expect(capture.logged.count == 1)
        for logged in capture.logged {
            #expect(!"\(logged.message) \(logged.metadata)".contains(Self.password))
        }
    }

    @Test(
        "a remote host whose certificate is not checked gets a warning; a checked or loopback one does not",
        arguments: [
            ("postgres://u@db.internal/d?sslmode=require", true), ("postgres://u@db.internal/d?sslmode=prefer", true),
            ("postgres://u@db.internal/d?sslmode=disable", true), ("postgres://u@db.internal/d", false),
            ("postgres://u@db.internal/d?sslmode=verify-ca", false),
            ("postgres://u@127.0.0.1/d?sslmode=require", false),
            ("postgres://u@localhost/d?sslmode=disable", false),
        ])
    func uncheckedWarning(url: String, warns: Bool) throws {
        let capture = LogCapture()
        let postgres = try #require(try ServerConfiguration.postgresConfiguration(url: url, password: nil))
        ServerConfiguration.announce(postgres, logger: capture.logger())
        #expect(capture.logged.contains { $0.level == .warning } == warns, "\(url)")
    }

    @Test(
        "PostgreSQL: serve connects with storage.password-file and logs its pool once, without the password",
        .enabled(PostgresAvailabilityTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func servesWithPasswordFile() async throws {
        let schema = "pwf_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let database = PostgresTestServer.configuration(schema: schema)
        let password = try #require(database.password)
        let (directory, path) = try Self.file(password + "\n")
        defer { try? FileManager.default.removeItem(at: directory) }
        let reader = try await ServerConfigurationSource.reader(
            flags: [
                "storage.url": ConfigValue(.string(database.description), isSecret: false),
                "storage.password-file": ConfigValue(.string(path), isSecret: false),
                "http.port": ConfigValue(.string("0"), isSecret: false),
            ],
            environment: [:])
        let configuration = try ServerConfiguration(reader: reader)
        let capture = LogCapture()
        let server = try AttestKitServer(configuration: configuration, logger: capture.logger(level: .info))
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        await PostgresTestServer.shared.gate.enter()
        let status = try? await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await server.run() }
            let port = try await server.boundPort()
            let response = try await client.execute(
                HTTPClientRequest(url: "http://127.0.0.1:\(port)/ready"), timeout: .seconds(30))
            group.cancelAll()
            return response.status.code
        }
        await PostgresTestServer.shared.gate.leave()
        try await client.shutdown()
        #expect(status == 200)
        let pool = capture.logged.filter { $0.message == "PostgreSQL connection pool" }
        #expect(pool.count == 1)
        #expect(pool.first?.metadata["pool_max_conns"] == "\(PostgresTestServer.connectionsPerStore)")
        #expect(pool.first?.metadata["sslmode"] == "disable")
        // The test server's password may equal its user name (`attestkit`): look for it where a password goes;
        // `announcement` checks a password that appears nowhere else.
        for logged in capture.logged {
            let text = "\(logged.message) \(logged.metadata)"
            #expect(!text.contains(":\(password)@") && !text.lowercased().contains("password"), "\(text)")
        }
        let cleanup = try PostgresTestServer.store(schema: schema)
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await cleanup.run() }
            try? await cleanup.dropSchema()
            await cleanup.close()
            group.cancelAll()
        }
    }
}
