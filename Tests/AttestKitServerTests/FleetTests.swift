import AsyncHTTPClient
import AttestKit
import AttestKitAppleMock
import AttestKitStore
import AttestKitTestSupport
import AttestKitTesting
import Foundation
import NIOCore
import NIOHTTP1
import Testing

/// Several `attestkit serve` processes on one PostgreSQL share the work of a fleet: each due receipt is traded with
/// Apple once across the replicas, the claims of a replica killed mid-round are picked up after their lease, and a
/// replica runs on a schema a newer release left when its migrations were additive.
@Suite("A fleet on one PostgreSQL", .serialized)
struct FleetTests {
    static var postgresWanted: Bool { ReplicaTests.postgresWanted }

    /// A fresh schema's storage URL, with a small pool per process (four processes share the server's 100
    /// connections with the other tests).
    static func storage() -> (url: String, schema: String) {
        let url = ReplicaTests.postgresURL + "&pool_max_conns=4"
        let schema = URLComponents(string: url)?.queryItems?.first { $0.name == "schema" }?.value ?? "attestkit"
        return (url, schema)
    }

    /// The test's own store on `schema`, running and prepared, for `body`.
    static func withStore<Result: Sendable>(
        schema: String, _ body: (PostgresAttestationStore) async throws -> Result
    ) async throws -> Result {
        let store = try PostgresTestServer.store(schema: schema)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            do {
                try await store.prepare()
                let result = try await body(store)
                await store.close()
                return result
            } catch {
                await store.close()
                throw error
            }
        }
    }

    @Test(
        "30 due receipts, four replicas, one killed mid-round: each traded once, the dead replica's claims picked up",
        .enabled(if: postgresWanted, "PostgreSQL is not configured (run scripts/postgres)"),
        .timeLimit(.minutes(5)))
    func receiptsTradedOnce() async throws {
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.fleet")
        let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
        let (storage, schema) = Self.storage()
        let workspace = FileManager.default.temporaryDirectory.appendingPathComponent("fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workspace) }
        // Each exchange takes 300 ms, so a round of 10 keys is under way long enough to be cut short.
        let appleMock = try ServeMockApple(
            apple: apple, riskMetric: 7,
            faults: [MockAppleFault(.delay(.milliseconds(300)), endpoint: .attestationData, count: 10_000)],
            workspace: workspace)
        let mock = appleMock.mock

        try await appleMock.running {
            let appleSettings =
                try await appleMock.settings() + [
                    "--set", "receipt-refresh.interval=0.2", "--set", "receipt-refresh.batch=10",
                    "--set", "receipt-refresh.lease=8", "--set", "apple.timeout=3.9",
                    // Two exchanges in flight at once: what the killed replica can leave answered but not stored.
                    "--set", "receipt-refresh.concurrency=2",
                ]
            func replica(jobs: Bool) throws -> ServeProcess {
                try ServeProcess(
                    apple: apple, appID: appID, storage: storage,
                    arguments: appleSettings + ["--set", "background.jobs=\(jobs ? "run" : "off")"])
            }

            // Register 30 keys through a replica that runs no background jobs: nothing is traded yet.
            let front = try replica(jobs: false)
            defer { front.stop() }
            let base = "http://127.0.0.1:\(try await front.port())"
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            var keys: [KeyID] = []
            do {
                for _ in 0..<30 {
                    let keyID = device.generateKey()
                    let (answer, _) = try await ServeClient.attest(client, base, device, keyID)
                    #expect(answer.status == 201, "\(answer.code ?? "")")
                    keys.append(keyID)
                }
                try await client.shutdown()
            } catch {
                try? await client.shutdown()
                throw error
            }
            #expect(await mock.state.receiptTrades.isEmpty)

            // A replica that trades: killed (SIGKILL) two exchanges into its first round of ten.
            let doomedStarted = Date()
            let doomed = try replica(jobs: true)
            defer { doomed.stop() }
            _ = try await doomed.port()
            try await Self.waitUntil("two receipts traded") { await mock.state.receiptTrades.count >= 2 }
            doomed.signal(SIGKILL)
            _ = await doomed.waitForExit(within: .seconds(30))
            let tradesAtKill = await mock.state.receiptTrades
            #expect(tradesAtKill.values.allSatisfy { $0 == 1 }, "\(tradesAtKill.values)")
            // Its round's other keys stay claimed: their refresh time is the lease's end, and nobody traded them.
            // (A claim is a refresh time after the replica started, whether or not the lease has passed since: the
            // keys were due when they were registered, before it.)
            let claimed = try await Self.withStore(schema: schema) { store in
                var claimed = 0
                for keyID in keys {
                    let record = try #require(try await store.key(keyID))
                    if record.riskMetric == nil, let refreshAt = record.receiptRefreshAt, refreshAt > doomedStarted {
                        claimed += 1
                    }
                }
                return claimed
            }
            #expect(claimed >= 5, "the killed replica's claims: \(claimed)")

            // Two replicas take over: the 20 unclaimed keys at once, between them, and the dead replica's claims
            // once their lease passes.
            let first = try replica(jobs: true)
            defer { first.stop() }
            let second = try replica(jobs: true)
            defer { second.stop() }
            _ = try await first.port()
            _ = try await second.port()
            try await Self.waitUntil("every key refreshed", within: .seconds(120)) {
                (try? await Self.withStore(schema: schema) { store in
                    for keyID in keys where try await store.key(keyID)?.riskMetric != 7 { return false }
                    return true
                }) ?? false
            }
            let trades = await mock.state.receiptTrades
            #expect(trades.count == 30, "every key's receipt was traded")
            // Once each; at most the exchanges the killed replica had in flight when it died (two) were answered twice.
            #expect(trades.values.reduce(0, +) <= 32, "\(trades.values.sorted())")
            #expect(trades.values.allSatisfy { $0 <= 2 }, "\(trades.values.sorted())")
            try await Self.withStore(schema: schema) { store in try await store.dropSchema() }
        }
    }

    @Test(
        "a replica that does not migrate serves on a schema one additive migration ahead, and refuses a breaking one",
        .enabled(if: postgresWanted, "PostgreSQL is not configured (run scripts/postgres)"),
        .timeLimit(.minutes(3)))
    func newerSchema() async throws {
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.fleet")
        let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
        let (storage, schema) = Self.storage()
        // The schema as this release leaves it, then what a newer release's additive migration adds.
        try await Self.withStore(schema: schema) { store in
            try await store.execute("ALTER TABLE \"\(schema)\".keys ADD COLUMN attested_os_build TEXT")
            try await store.execute("CREATE TABLE \"\(schema)\".future_notes (note TEXT)")
            try await store.execute("UPDATE \"\(schema)\".schema_version SET version = version + 1")
        }
        let replica = try ServeProcess(
            apple: apple, appID: appID, storage: storage, arguments: ["--set", "storage.migrations=verify"])
        defer { replica.stop() }
        let base = "http://127.0.0.1:\(try await replica.port())"
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let ready = try await ReplicaTests.send(client, .GET, base + "/ready")
            #expect(ready.status == 200)
            let keyID = device.generateKey()
            let (registered, _) = try await ServeClient.attest(client, base, device, keyID)
            #expect(registered.status == 201, "\(registered.code ?? "")")
            let assertion = try ServeClient.assertion(device, keyID, freshness: ServeClient.now, challengeID: nil)
            let verified = try await ServeClient.post(client, base + "/v1/assertions/verify", assertion)
            #expect(verified.status == 200, "\(verified.code ?? "")")
            try await client.shutdown()
        } catch {
            try? await client.shutdown()
            throw error
        }
        replica.stop()

        // A newer release whose migration the previous one cannot run on: refused at start, the schema untouched.
        try await Self.withStore(schema: schema) { store in
            try await store.execute(
                "UPDATE \"\(schema)\".schema_version SET version = version + 1, compatible_from = version + 1")
        }
        for policy in ["verify", "apply"] {
            let refused = try ServeProcess(
                apple: apple, appID: appID, storage: storage, arguments: ["--set", "storage.migrations=\(policy)"])
            defer { refused.stop() }
            let status = await refused.waitForExit(within: .seconds(60))
            #expect(status != nil && status != 0, "\(policy): \(String(describing: status))")
            #expect(refused.log.contains("needs a release that knows at least"), "\(policy): \(refused.log)")
        }
        let store = try PostgresTestServer.store(schema: schema)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            try await store.dropSchema()
            await store.close()
            group.cancelAll()
        }
    }

    /// Polls `condition` every 50 ms until it holds; fails after `limit` (which only tells "answered" from "hung").
    static func waitUntil(
        _ what: String, within limit: Duration = .seconds(60), _ condition: () async -> Bool
    ) async throws {
        let start = ContinuousClock.now
        while !(await condition()) {
            guard start.duration(to: .now) < limit else {
                Issue.record("not within \(limit): \(what)")
                throw CancellationError()
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
