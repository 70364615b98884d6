public import AttestKitStore
import Foundation
import ServiceLifecycle
import Testing

/// The PostgreSQL server the tests use, from `POSTGRES_HOST`, `POSTGRES_PORT`, `POSTGRES_USER`,
/// `POSTGRES_PASSWORD` and `POSTGRES_DB` (defaults 127.0.0.1, 5432, attestkit, attestkit, attestkit_test).
///
/// When it cannot be reached, the PostgreSQL cases fail if `CI` is set or `ATTESTKIT_REQUIRE_POSTGRES=1`
/// (as `scripts/test` sets); otherwise they are left out and the test "PostgreSQL backend" is reported
/// skipped with the reason. Each test
/// works in a schema of its own, dropped at the end; a gate bounds how many run at once, so the server's
/// connection limit is never reached.
public actor PostgresTestServer {
    /// The one instance of the test process (every test target's PostgreSQL tests share its gate).
    public static let shared = PostgresTestServer()

    /// At most this many PostgreSQL tests at once, each with at most ``connectionsPerStore`` per store, so that
    /// the server's connection limit (100 by default) is never reached.
    public nonisolated let gate = AsyncGate(limit: 6)
    /// The most connections of one test store.
    public static let connectionsPerStore = 8

    static var environment: [String: String] { ProcessInfo.processInfo.environment }

    /// Whether PostgreSQL is required (`CI` set or `ATTESTKIT_REQUIRE_POSTGRES=1`).
    public static var required: Bool {
        environment["CI"].map { !$0.isEmpty } == true || environment["ATTESTKIT_REQUIRE_POSTGRES"] == "1"
    }

    /// The configuration of a store in `schema`.
    public static func configuration(schema: String) -> PostgresStoreConfiguration {
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

    /// The storage URL of `attestkit serve` for the same server, in a new schema whose name starts with `prefix`
    /// (replica and fleet tests, where each process opens its own pool).
    public static func storageURL(schemaPrefix prefix: String) -> String {
        let environment = Self.environment
        let user = environment["POSTGRES_USER"] ?? "attestkit"
        let password = environment["POSTGRES_PASSWORD"] ?? "attestkit"
        let host = environment["POSTGRES_HOST"] ?? "127.0.0.1"
        let port = environment["POSTGRES_PORT"] ?? "5432"
        let database = environment["POSTGRES_DB"] ?? "attestkit_test"
        let schema = "\(prefix)\(UInt32.random(in: 0...UInt32.max))"
        return "postgres://\(user):\(password)@\(host):\(port)/\(database)?schema=\(schema)&sslmode=disable"
    }

    /// A store in `schema`, not running yet.
    public static func store(schema: String) throws -> PostgresAttestationStore {
        try PostgresAttestationStore(configuration: configuration(schema: schema))
    }

    /// Whether the PostgreSQL cases run: the server answers, or it is required (and its cases then fail).
    public func shouldRun() async -> Bool {
        if Self.required { return true }
        return await probe()
    }

    /// Whether the server answers; records a failure when it does not (callers run only when required).
    public func isAvailable() async -> Bool {
        guard await probe() else {
            let location = Self.configuration(schema: "attestkit").description
            Issue.record("PostgreSQL is required (CI or ATTESTKIT_REQUIRE_POSTGRES=1) but not reachable at \(location)")
            return false
        }
        return true
    }

    private var probeTask: Task<Bool, Never>?

    /// Prepares a probe schema within 45 seconds, once per process.
    public func probe() async -> Bool {
        if let probeTask { return await probeTask.value }
        guard let store = try? Self.store(schema: "attestkit_probe") else { return false }
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
                // Answered or hung, not fast: at the start of a run every suite starts at once on CI's two cores,
                // and the probe's migrations have taken more than 6 s there. An unreachable server refuses at once.
                group.addTask {
                    try? await Task.sleep(for: .seconds(45))
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
