@testable import AttestKitStore
import Foundation
import ServiceLifecycle
import Testing

/// The PostgreSQL server the tests use, from `POSTGRES_HOST`, `POSTGRES_PORT`, `POSTGRES_USER`,
/// `POSTGRES_PASSWORD` and `POSTGRES_DB` (defaults 127.0.0.1, 5432, attestkit, attestkit, attestkit_test).
///
/// When it cannot be reached, a test that needs it fails if `CI` is set or `ATTESTKIT_REQUIRE_POSTGRES=1`
/// (as `scripts/test` sets), and is otherwise cancelled, which Swift Testing reports as skipped. Each test
/// works in a schema of its own, dropped at the end; a gate bounds how many run at once, so the server's
/// connection limit is never reached.
actor PostgresTestServer {
    static let shared = PostgresTestServer()

    /// At most this many PostgreSQL tests at once, each with at most ``connectionsPerStore`` per store.
    let gate = AsyncGate(limit: 4)
    static let connectionsPerStore = 6


    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    static var required: Bool {
        environment["CI"].map { !$0.isEmpty } == true || environment["ATTESTKIT_REQUIRE_POSTGRES"] == "1"
    }

    static func configuration(schema: String) -> PostgresStoreConfiguration {
        let environment = Self.environment
        return PostgresStoreConfiguration(
            host: environment["POSTGRES_HOST"] ?? "127.0.0.1",
            port: environment["POSTGRES_PORT"].flatMap(Int.init) ?? 5432,
            username: environment["POSTGRES_USER"] ?? "attestkit",
            password: environment["POSTGRES_PASSWORD"] ?? "attestkit",
            database: environment["POSTGRES_DB"] ?? "attestkit_test",
            schema: schema,
            tls: .disable,
            maximumConnections: connectionsPerStore,
            connectTimeout: .seconds(5))
    }

    static func store(schema: String) throws -> PostgresAttestationStore {
        try PostgresAttestationStore(configuration: configuration(schema: schema))
    }

    /// Whether the server answers; when it does not, records a failure (required) or cancels the test.
    func isAvailable() async throws -> Bool {
        let reachable = try await probe()
        guard !reachable else { return true }
        let where_ = Self.configuration(schema: "attestkit").description
        if Self.required {
            Issue.record("PostgreSQL is required (CI or ATTESTKIT_REQUIRE_POSTGRES=1) but not reachable at \(where_)")
            return false
        }
        try Test.cancel("PostgreSQL is not reachable at \(where_); run scripts/postgres, or set ATTESTKIT_REQUIRE_POSTGRES=1 to fail")
    }

    private var probeTask: Task<Bool, Never>?

    /// Prepares a probe schema within a few seconds, once per process.
    private func probe() async throws -> Bool {
        if let probeTask { return await probeTask.value }
        let store = try Self.store(schema: "attestkit_probe")
        let task = Task {
            await withTaskGroup(of: Bool?.self) { group in
                group.addTask {
                    try? await store.run()
                    return nil
                }
                group.addTask {
                    do {
                        try await store.prepare()
                        try await store.dropSchema()
                        return true
                    } catch {
                        return false
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(10))
                    return false
                }
                var answer = false
                while let value = await group.next() {
                    if let value {
                        answer = value
                        break
                    }
                }
                group.cancelAll()
                return answer
            }
        }
        probeTask = task
        return await task.value
    }
}

/// A counting semaphore for async code.
actor AsyncGate {
    private let limit: Int
    private var running = 0
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) {
        self.limit = limit
    }

    func enter() async {
        if running < limit {
            running += 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func leave() {
        if waiters.isEmpty {
            running -= 1
        } else {
            waiters.removeFirst().resume()
        }
    }
}
