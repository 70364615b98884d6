import AsyncHTTPClient
import AttestKit
import AttestKitStore
import AttestKitTestSupport
import AttestKitTesting
import Foundation
import NIOCore
import Testing

/// `attestkit serve` on a private PostgreSQL cluster that is restarted, stopped, crashed (SIGKILL) and frozen
/// (SIGSTOP) while eight keys assert concurrently (issue 13): every request is answered within the operation
/// timeout plus a little, with 200 or 503 `storage_unavailable`; service resumes by itself; no acknowledged counter
/// is lost; SIGTERM finishes promptly while the database is frozen.
@Suite("PostgreSQL faults: attestkit serve", .serialized)
struct ServePostgresFaultTests {
    static let timeout = Duration.seconds(2)
    /// Scheduling slack over the deadline: HTTP, verification, and a loaded 2-core machine.
    static let slack = Duration.seconds(1)
    /// How long SIGTERM may take while the database is frozen: in-flight requests end by their deadline, then the
    /// pool closes.
    static let shutdownLimit = Duration.seconds(5)

    @Test(
        "8 keys asserting through restart, stop, crash and freeze: bounded answers, no lost counter, prompt SIGTERM",
        .enabled(
            if: PostgresCluster.isInstalled || PostgresTestServer.required,
            "PostgreSQL's server binaries are not installed (run scripts/postgres)"),
        .timeLimit(.minutes(2)))
    func drill() async throws {
        let cluster = try await PostgresCluster.create()
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            try await Self.drill(cluster, client)
            try await client.shutdown()
            try await cluster.destroy()
        } catch {
            try? await client.shutdown()
            try? await cluster.destroy()
            throw error
        }
    }

    static func drill(_ cluster: PostgresCluster, _ client: HTTPClient) async throws {
        let apple = try SoftwareApple()
        let appID = try AppID("ABCDE12345.com.example.faults")
        let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
        let serve = try ServeProcess(
            apple: apple, appID: appID, storage: cluster.url(schema: "serve", operationTimeout: timeout))
        defer { serve.stop() }
        let base = try await serve.baseURL().absoluteString
        let drill = FaultDrill(cluster: cluster, outage: .seconds(3), recoveryLimit: .seconds(20))
        var registered: [KeyID] = []
        for _ in 0..<drill.workers {
            let keyID = device.generateKey()
            let (answer, _) = try await ServeClient.attest(client, base, device, keyID)
            try #require(answer.status == 201, "registration: \(answer.status) \(answer.code ?? "")")
            registered.append(keyID)
        }
        let keys = registered
        let verify = base + "/v1/assertions/verify"
        // The counter of each key's last acknowledged assertion (200).
        let acknowledged = FaultDrill.Tally(workers: keys.count)
        let requestLimit = timeout * 5
        let report = try await drill.run { worker in
            do {
                let body = try ServeClient.assertion(device, keys[worker], freshness: ServeClient.now, challengeID: nil)
                let answer = try await ServeClient.post(
                    client, verify, body, timeout: .seconds(requestLimit.components.seconds))
                switch (answer.status, answer.code) {
                case (200, _):
                    let counter = answer.json["counter"] as? Int ?? 0
                    acknowledged.raise(worker, to: counter)
                    return .success
                case (503, "storage_unavailable"): return .unavailable
                default: return .other("\(answer.status) \(answer.code ?? "")")
                }
            } catch {
                return .other("no answer: \(error)")
            }
        }
        let stored = try await cluster.storedCounters(schema: "serve", keys: keys)
        report.check(
            "PostgreSQL faults, attestkit serve (operation_timeout \(timeout))", within: timeout + slack,
            acknowledged: acknowledged, stored: stored)

        // SIGTERM with the database frozen and requests in flight.
        try await cluster.freeze()
        let inFlight = Task {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for worker in keys.indices {
                    group.addTask {
                        let body = try ServeClient.assertion(
                            device, keys[worker], freshness: ServeClient.now, challengeID: nil)
                        _ = try? await ServeClient.post(client, verify, body, timeout: .seconds(10))
                    }
                }
                try await group.waitForAll()
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        let shutdown = await serve.terminate(within: .seconds(20))
        let took = shutdown.map { "\($0)" } ?? "over 20 s (killed)"
        print("PostgreSQL faults, attestkit serve: SIGTERM with the database frozen took \(took)")
        #expect(shutdown.map { $0 <= shutdownLimit } == true, "\(took)")
        _ = try? await inFlight.value
        try await cluster.thaw()
    }
}
