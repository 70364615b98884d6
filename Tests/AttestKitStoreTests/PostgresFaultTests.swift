import AttestKit
import AttestKitTestSupport
import Foundation
import Testing

@testable import AttestKitStore

/// ``PostgresAttestationStore`` against a private cluster that is restarted, stopped, crashed (SIGKILL) and frozen
/// (SIGSTOP) under load (issue 13): every call answers within the operation timeout plus a little, service resumes
/// by itself, no acknowledged counter is lost, and the store shuts down while the database is frozen.
@Suite("PostgreSQL faults: the store", .serialized)
struct PostgresFaultTests {
    static let timeout = Duration.seconds(1)
    /// Scheduling slack over the deadline on a loaded 2-core machine.
    static let slack = Duration.seconds(1)

    static var enabled: Bool { PostgresCluster.isInstalled || PostgresTestServer.required }

    @Test(
        "8 workers advancing counters through restart, stop, crash and freeze: bounded answers, no lost counter",
        .enabled(if: enabled, "PostgreSQL's server binaries are not installed (run scripts/postgres)"),
        .timeLimit(.minutes(2)))
    func drill() async throws {
        let cluster = try await PostgresCluster.create()
        do {
            try await Self.drill(cluster)
            try await cluster.destroy()
        } catch {
            try? await cluster.destroy()
            throw error
        }
    }

    static func drill(_ cluster: PostgresCluster) async throws {
        let store = try PostgresAttestationStore(
            configuration: cluster.configuration(schema: "faults", operationTimeout: timeout))
        let running = Task { try await store.run() }
        try await store.prepare()
        let drill = FaultDrill(cluster: cluster, outage: .seconds(2), recoveryLimit: .seconds(15))
        var keys: [KeyID] = []
        for _ in 0..<drill.workers {
            let registration = try TestKeys.registration()
            keys.append(try await store.registerKey(registration, now: TestKeys.t0).keyID)
        }
        let sent = FaultDrill.Tally(workers: keys.count)
        let acknowledged = FaultDrill.Tally(workers: keys.count)
        let report = try await drill.run { [keys] worker in
            let counter = sent.increment(worker)
            do {
                try await store.advanceCounter(of: keys[worker], to: UInt32(counter), now: TestKeys.t0)
                acknowledged.raise(worker, to: counter)
                return .success
            } catch let error as StoreError where error.code == .storageUnavailable {
                return .unavailable
            } catch {
                return .other("\(error)")
            }
        }
        let stored = try await cluster.storedCounters(schema: "faults", keys: keys)
        report.check(
            "PostgreSQL faults, store (operation timeout \(timeout))", within: timeout + slack,
            acknowledged: acknowledged, stored: stored)

        // Shutdown with the database frozen, a call in flight: the call answers by its deadline, the pool closes.
        try await cluster.freeze()
        let inFlight = Task { try await store.key(keys[0]) }
        try await Task.sleep(for: .milliseconds(200))
        let start = ContinuousClock.now
        await store.close()
        running.cancel()
        _ = try? await running.value
        _ = try? await inFlight.value
        let shutdown = start.duration(to: .now)
        print("PostgreSQL faults, store: shut down in \(shutdown) with the database frozen")
        #expect(shutdown <= timeout + slack, "\(shutdown)")
        try await cluster.thaw()
    }
}
