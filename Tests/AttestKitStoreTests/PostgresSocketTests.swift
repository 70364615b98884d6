import AttestKit
import AttestKitTestSupport
import Foundation
import Testing

@testable import AttestKitStore

/// A store whose host is the directory of PostgreSQL's Unix-domain socket (libpq's meaning), against a private
/// cluster whose socket lives in its own directory.
@Suite("PostgreSQL over a Unix-domain socket", .serialized)
struct PostgresSocketTests {
    @Test(
        "the URL's host=DIRECTORY connects through the socket file, without TCP: migrations, a key, its counter",
        .enabled(if: PostgresFaultTests.enabled, "PostgreSQL's server binaries are not installed (run scripts/postgres)"),
        .timeLimit(.minutes(2)))
    func overTheSocket() async throws {
        let cluster = try await PostgresCluster.create()
        do {
            let directory = cluster.directory.path
            let url = try StoreURL(
                "postgres://attestkit@:\(cluster.port)/postgres?host=\(directory)&schema=socket_check")
            let configuration = try #require(url.postgres)
            #expect(configuration.unixSocketPath == "\(directory)/.s.PGSQL.\(cluster.port)")
            #expect(configuration.tls == .disable)
            let store = try PostgresAttestationStore(configuration: configuration)
            let running = Task { try await store.run() }
            try await store.prepare()
            let registration = try TestKeys.registration()
            let keyID = try await store.registerKey(registration, now: TestKeys.t0).keyID
            try await store.advanceCounter(of: keyID, to: 3, now: TestKeys.t0)
            #expect(try await store.key(keyID)?.counter == 3)
            // The server sees the session without a client address: a Unix-domain socket, not loopback TCP.
            let rows = try await store.sql.executor.query(
                "reading the transport",
                SQLStatement("SELECT CASE WHEN inet_client_addr() IS NULL THEN 1 ELSE 0 END AS n"), access: .read,
                by: nil)
            #expect(try rows.first?.integer("n") == 1)
            await store.close()
            running.cancel()
            _ = try? await running.value
            try await cluster.destroy()
        } catch {
            try? await cluster.destroy()
            throw error
        }
    }

    @Test("a socket directory where no server listens fails prepare() at once, naming no password")
    func nothingListens() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "attestkit-nosocket-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try PostgresAttestationStore(
            configuration: PostgresStoreConfiguration(
                host: directory.path, username: "attestkit", password: "not-logged", database: "postgres",
                connectTimeout: .seconds(2)))
        let running = Task { try await store.run() }
        let error = await #expect(throws: StoreError.self) { try await store.prepare() }
        #expect(error?.code == .storageUnavailable)
        #expect(error.map { !"\($0)".contains("not-logged") } ?? false)
        await store.close()
        running.cancel()
        _ = try? await running.value
    }
}
