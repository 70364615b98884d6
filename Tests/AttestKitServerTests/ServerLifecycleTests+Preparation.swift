import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTestSupport
import AttestKitTesting
import Foundation
import Logging
import Testing

/// The background jobs start only once the store is prepared: a replica whose schema is refused at start (a
/// forgotten migration under `storage.migrations=verify`, a rollback) exits without having deleted a row, claimed a
/// key or called Apple.
extension ServerLifecycleTests {
    @Test(
        "a store refused at start: serve fails, and no background job touched the store before",
        .timeLimit(.minutes(2)))
    func backgroundJobsWaitForThePreparedStore() async throws {
        let store = CountingStore(
            MemoryAttestationStore(),
            beforePrepare: { () async throws(StoreError) in
                try? await Task.sleep(for: .milliseconds(500))
                throw StoreError(.storageUnavailable, "the schema is newer than this release")
            })
        let server = try Self.serverWithQuickCleanup(store)
        await #expect(throws: (any Error).self) { try await server.run() }
        #expect(store.calls("prepare") == 1)
        #expect(store.calls("acquireLease") == 0, "the cleanup ran before the schema was checked")
    }

    /// A server on `store` (on a free port) whose cleanup runs every 10 ms.
    static func serverWithQuickCleanup(_ store: CountingStore) throws -> AttestKitServer {
        var configuration = ServerConfiguration(
            appIDs: [Fixture.appID], environments: .development, host: "127.0.0.1", port: 0, storageURL: "memory:",
            trustAnchors: Fixture.apple.trustAnchors, logLevel: .critical)
        configuration.challengeCleanupInterval = .milliseconds(10)
        return try AttestKitServer(
            configuration: configuration, store: store,
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    @Test("a prepared store: the background jobs run", .timeLimit(.minutes(2)))
    func backgroundJobsRunOncePrepared() async throws {
        let store = CountingStore(MemoryAttestationStore())
        let server = try Self.serverWithQuickCleanup(store)
        let running = Task { try await server.run() }
        defer { running.cancel() }
        _ = try await server.boundPort()
        let start = ContinuousClock.now
        while store.calls("acquireLease") == 0, start.duration(to: .now) < .seconds(60) {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(store.calls("acquireLease") > 0)
        running.cancel()
        _ = try? await running.value
    }
}
