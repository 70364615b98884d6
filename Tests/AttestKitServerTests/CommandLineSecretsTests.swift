import AttestKitFlows
import AsyncHTTPClient
import AttestKit
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

/// A command line is readable by every user of the machine (`ps`): every secret setting is refused there, derived
/// from the list of secrets, the storage URL's password included; that password comes from `storage.password`.
@Suite("Secrets never on the command line")
struct CommandLineSecretsTests {
    static let secretValue = "a-secret-value-0123456789-abcdefghijklmnop"

    @Test("every secret setting is refused on the command line, without repeating the value")
    func everySecretRefused() {
        #expect(ServerConfiguration.secretKeys.isSuperset(of: ["admin.token", "debug.tokens", "storage.password"]))
        for key in ServerConfiguration.secretKeys where key != "storage.url" {
            let refusal = ServerConfigurationSource.commandLineRefusal(key: key, value: Self.secretValue)
            #expect(refusal?.key == key, "\(key)")
            #expect(refusal.map { !$0.description.contains(Self.secretValue) } == true)
            #expect(refusal?.description.contains(ServerConfigurationSource.environmentVariable(for: key)) == true)
        }
        for key in ServerConfiguration.configurationKeys where !ServerConfiguration.secretKeys.contains(key) {
            #expect(ServerConfigurationSource.commandLineRefusal(key: key, value: "1") == nil, "\(key)")
        }
    }

    @Test(
        "a storage URL on the command line is refused when it carries a password, accepted without",
        arguments: [
            ("postgres://attestkit:hunter2-secret@127.0.0.1:5432/db", true),
            ("postgresql://attestkit:hunter2-secret@db.example/db?sslmode=require", true),
            ("postgres://attestkit:@127.0.0.1/db", true),
            ("postgres://attestkit:hunter2-secret@/db", true),  // no host: not a storage URL, still a password
            ("postgres://attestkit@127.0.0.1:5432/db?schema=app", false),
            ("sqlite:attestkit-data/attestkit.sqlite", false),
            ("sqlite:///var/lib/attestkit/user:pw@x.sqlite", false),
            ("memory:", false),
        ])
    func storageURL(url: String, refused: Bool) {
        let refusal = ServerConfigurationSource.commandLineRefusal(key: "storage.url", value: url)
        #expect((refusal != nil) == refused, "\(url)")
        #expect(refusal.map { !$0.description.contains("hunter2") && $0.description.contains("storage-password") } ?? true)
    }

    @Test("a password is split from a storage URL for a child process, percent-decoded")
    func split() throws {
        let (url, password) = ServerConfigurationSource.splitStoragePassword(
            "postgres://attestkit:p%40ss%3Aword@127.0.0.1:5432/db?schema=app")
        #expect(password == "p@ss:word")
        #expect(!url.contains("p%40ss") && url.hasPrefix("postgres://attestkit@127.0.0.1:5432/db"))
        #expect(try StoreURL(url).postgres?.password == nil)
        #expect(ServerConfigurationSource.splitStoragePassword("sqlite:a.sqlite") == ("sqlite:a.sqlite", nil))
    }

    @Test("storage.password comes from the environment or the secrets directory, and stays secret")
    func storagePassword() async throws {
        let url = "postgres://attestkit@127.0.0.1:5432/attestkit"
        let fromEnvironment = try await ServerConfigurationSource.load(
            environment: ["ATTESTKIT_STORAGE_URL": url, "ATTESTKIT_STORAGE_PASSWORD": Self.secretValue])
        #expect(fromEnvironment.storagePassword == Self.secretValue)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("secrets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("\(Self.secretValue)\n".utf8).write(to: directory.appendingPathComponent("storage-password"))
        let reporter = CollectingReporter()
        let reader = try await ServerConfigurationSource.reader(
            flags: ["storage.url": ConfigValue(.string(url), isSecret: false)], environment: [:],
            secretsDirectory: directory.path, accessReporter: reporter)
        let fromFile = try ServerConfiguration(reader: reader)
        #expect(fromFile.storagePassword == Self.secretValue)
        for text in [String(describing: reader), String(reflecting: reader)] + reporter.events.map({ "\($0)" }) {
            #expect(!text.contains(Self.secretValue))
        }
    }

    @Test(
        "storage.password is refused beside a SQLite URL or a URL with its own password",
        arguments: ["sqlite:a.sqlite", "memory:", "postgres://attestkit:other@127.0.0.1/db"])
    func storagePasswordRefused(url: String) async {
        await #expect {
            _ = try await ServerConfigurationSource.load(
                environment: ["ATTESTKIT_STORAGE_URL": url, "ATTESTKIT_STORAGE_PASSWORD": Self.secretValue])
        } throws: { error in
            guard let error = error as? ServerConfigurationError else { return false }
            return error.key == "storage.password" && !error.description.contains(Self.secretValue)
        }
    }

    @Test(
        "PostgreSQL: the server connects with the URL's password given apart (storage.password)",
        .enabled(PostgresAvailabilityTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func postgresWithSeparatePassword() async throws {
        let schema = "pw_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let database = PostgresTestServer.configuration(schema: schema)
        let url = database.description
        #expect(try StoreURL(url).postgres?.password == nil)
        let password = try #require(database.password)
        let reader = try await ServerConfigurationSource.reader(
            flags: [
                "storage.url": ConfigValue(.string(url), isSecret: false),
                "http.port": ConfigValue(.string("0"), isSecret: false),
            ],
            environment: ["ATTESTKIT_STORAGE_PASSWORD": password])
        let configuration = try ServerConfiguration(reader: reader)
        #expect(configuration.storagePassword == password)
        let server = try AttestKitServer(
            configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
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
        #expect(status == 200)
        try await client.shutdown()
        let cleanup = try PostgresTestServer.store(schema: schema)
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await cleanup.run() }
            try? await cleanup.dropSchema()
            await cleanup.close()
            group.cancelAll()
        }
    }
}
