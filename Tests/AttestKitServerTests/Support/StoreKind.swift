import AttestKitStore
import Foundation
import Testing

/// The stores the end-to-end tests run the server on.
///
/// PostgreSQL comes from `POSTGRES_HOST`, `POSTGRES_PORT`, `POSTGRES_USER`, `POSTGRES_PASSWORD` and `POSTGRES_DB`
/// (set by `eval "$(scripts/postgres)"`; defaults 127.0.0.1, 5432, attestkit, attestkit, attestkit_test), as in
/// the store's own tests. When it cannot be reached its cases are left out, unless `CI` is set or
/// `ATTESTKIT_REQUIRE_POSTGRES=1`: then they run and fail. Every PostgreSQL harness works in a schema of its own,
/// dropped at the end, so runs never collide.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The stores to test: PostgreSQL when it answers or is required.
    static func all() async -> [StoreKind] {
        await PostgresTestServer.shared.shouldRun() ? allCases : [.sqlite]
    }

    /// A new, empty store of this kind, not running yet.
    func makeStore() async throws -> TestStore {
        switch self {
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory
                .appendingPathComponent("attestkit-e2e-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let store = SQLiteAttestationStore(path: directory.appendingPathComponent("store.sqlite").path)
            return TestStore(store: store, dropSchema: nil, directory: directory)
        case .postgres:
            guard await PostgresTestServer.shared.isAvailable() else { throw PostgresUnavailable() }
            let schema = "e2e_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            let store = try PostgresTestServer.store(schema: schema)
            return TestStore(store: store, dropSchema: { try? await store.dropSchema() }, directory: nil)
        }
    }
}

/// A store made for one harness, and how to remove what it leaves behind.
struct TestStore: Sendable {
    let store: any AttestationStore
    /// Drops the PostgreSQL schema; works after `close()`, while the store's `run()` still runs.
    let dropSchema: (@Sendable () async -> Void)?
    /// The SQLite file's folder, removed once the store stopped.
    let directory: URL?

    /// Removes what is left once the store has stopped.
    func removeFiles() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }
}

/// PostgreSQL was required but did not answer (already recorded as an issue).
struct PostgresUnavailable: Error {}

/// The PostgreSQL server of the tests; see ``StoreKind``.
actor PostgresTestServer {
    static let shared = PostgresTestServer()

    /// At most this many PostgreSQL harnesses at once, each with at most ``connectionsPerStore`` connections, so
    /// that the server's connection limit is never reached.
    let gate = AsyncGate(limit: 4)
    static let connectionsPerStore = 8

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

    /// Whether the PostgreSQL cases run: the server answers, or it is required (and its cases then fail).
    func shouldRun() async -> Bool {
        if Self.required { return true }
        return await probe()
    }

    /// Whether the server answers; records an issue when it does not.
    func isAvailable() async -> Bool {
        guard await probe() else {
            let location = Self.configuration(schema: "attestkit").description
            Issue.record("PostgreSQL is required (CI or ATTESTKIT_REQUIRE_POSTGRES=1) but not reachable at \(location)")
            return false
        }
        return true
    }

    private var probeTask: Task<Bool, Never>?

    /// Prepares a probe schema within a few seconds, once per process.
    func probe() async -> Bool {
        if let probeTask { return await probeTask.value }
        guard let store = try? Self.store(schema: "attestkit_e2e_probe") else { return false }
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
                        await store.close()
                        return true
                    } catch {
                        await store.close()
                        return false
                    }
                }
                group.addTask {
                    try? await Task.sleep(for: .seconds(6))
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
