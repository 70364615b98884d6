import ArgumentParser
import AttestKit
import AttestKitStore
import Crypto
import Foundation
import ServiceLifecycle

/// `attestkit bench --storage`: what the stores sustain, on SQLite (a temporary file) and on PostgreSQL.
struct StorageBenchOptions: ParsableArguments {
    @Flag(
        name: .long,
        help: """
            Measure the stores instead of verification: challenge issue+consume and counter advances per second, \
            on SQLite and on PostgreSQL (with --postgres or POSTGRES_HOST).
            """)
    var storage = false

    @Option(name: .long, help: "A postgres:// URL to measure; a throw-away schema is created there and dropped.")
    var postgres: String?

    @Option(name: .long, help: "Seconds per storage figure.")
    var storageSeconds: Double = 1.5

    /// Runs the storage bench when `--storage` was given; returns whether it did.
    func runIfRequested(json: Bool) async throws -> Bool {
        guard storage else { return false }
        var figures: [StorageFigure] = []
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestkit-bench-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let sqlite = try StoreURL("sqlite:" + directory.appendingPathComponent("bench.sqlite").path)
        figures += try await sqlite.withStore { store in
            try await StorageBench(seconds: storageSeconds).measure("sqlite", store)
        }
        if let url = try postgresURL() {
            figures += try await StorageBench(seconds: storageSeconds).measurePostgres(url)
        }
        if json {
            try BenchJSON.print(figures)
        } else {
            #if DEBUG
                print(
                    "warning: debug build; run `swift run -c release attestkit bench --storage` "
                        + "for meaningful numbers")
            #endif
            print("store      operation                  tasks        ops/s")
            for figure in figures {
                print(
                    figure.store.padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                        + figure.operation.padding(toLength: 24, withPad: " ", startingAt: 0)
                        + String(format: "%7d %12.0f", figure.tasks, figure.operationsPerSecond))
            }
        }
        return true
    }

    /// `--postgres`, else a URL from `POSTGRES_HOST`, `POSTGRES_PORT`, `POSTGRES_USER`, `POSTGRES_PASSWORD`,
    /// `POSTGRES_DB` when `POSTGRES_HOST` is set, else none.
    private func postgresURL() throws -> StoreURL? {
        if let postgres { return try StoreURL(postgres) }
        let environment = ProcessInfo.processInfo.environment
        guard let host = environment["POSTGRES_HOST"] else { return nil }
        var components = URLComponents()
        components.scheme = "postgres"
        components.host = host
        components.port = environment["POSTGRES_PORT"].flatMap(Int.init) ?? 5432
        components.user = environment["POSTGRES_USER"] ?? "attestkit"
        components.password = environment["POSTGRES_PASSWORD"]
        components.path = "/" + (environment["POSTGRES_DB"] ?? "attestkit_test")
        components.queryItems = [URLQueryItem(name: "sslmode", value: "disable")]
        return try StoreURL(components.string ?? "")
    }
}

/// One storage figure.
struct StorageFigure: Encodable {
    var store: String
    var operation: String
    var tasks: Int
    var operationsPerSecond: Double

    enum CodingKeys: String, CodingKey {
        case store, operation, tasks
        case operationsPerSecond = "operations_per_second"
    }
}

/// Throughput of the store operations on the hot paths, with one task and with several concurrent tasks.
struct StorageBench {
    var seconds: Double
    var concurrency = 16

    /// Measures a PostgreSQL store in a throw-away schema, dropped after.
    func measurePostgres(_ url: StoreURL) async throws -> [StorageFigure] {
        guard var configuration = url.postgres else { return [] }
        configuration.schema = "attestkit_bench_\(UInt32.random(in: 0...UInt32.max))"
        configuration.maximumConnections = concurrency
        let store = try PostgresAttestationStore(configuration: configuration)
        return try await withThrowingTaskGroup(of: [StorageFigure].self) { group in
            group.addTask {
                try await store.run()
                return []
            }
            do {
                try await store.prepare()
                let figures = try await measure("postgres", store)
                try await store.dropSchema()
                group.cancelAll()
                return figures
            } catch {
                try? await store.dropSchema()
                group.cancelAll()
                throw error
            }
        }
    }

    /// Challenge issue+consume pairs and counter advances per second, with 1 and ``concurrency`` tasks.
    func measure(_ name: String, _ store: any AttestationStore) async throws -> [StorageFigure] {
        var figures: [StorageFigure] = []
        for tasks in [1, concurrency] {
            let pairs = try await throughput(tasks: tasks) { _ in
                let now = Date()
                let challenge = try await store.issueChallenge(purpose: .assert, now: now)
                _ = try await store.consumeChallenge(challenge.id, purpose: .assert, keyID: nil, now: now)
            }
            figures.append(
                StorageFigure(
                    store: name, operation: "challenge_issue_consume", tasks: tasks, operationsPerSecond: pairs))
        }
        for tasks in [1, concurrency] {
            var keys: [KeyID] = []
            for _ in 0..<tasks {
                let key = P256.Signing.PrivateKey().publicKey
                let registration = try KeyRegistration(
                    keyID: KeyID(publicKey: key), publicKeyX963: Array(key.x963Representation),
                    appID: try AppID("ABCDE12345.com.example.bench"), environment: .production)
                keys.append(try await store.registerKey(registration, now: Date()).keyID)
            }
            let counters = CounterSource()
            let registered = keys
            let advances = try await throughput(tasks: tasks) { task in
                try await store.advanceCounter(of: registered[task], to: await counters.next(task), now: Date())
            }
            figures.append(
                StorageFigure(store: name, operation: "counter_advance", tasks: tasks, operationsPerSecond: advances))
        }
        _ = try await store.deleteExpiredChallenges(now: Date().addingTimeInterval(3_600))
        return figures
    }

    /// Operations per second of `tasks` loops running `body` until the time is up.
    private func throughput(tasks: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(Int(seconds * 1000)))
        let start = clock.now
        let count = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<tasks {
                group.addTask {
                    var done = 0
                    while clock.now < deadline {
                        try await body(task)
                        done += 1
                    }
                    return done
                }
            }
            return try await group.reduce(0, +)
        }
        let elapsed = start.duration(to: clock.now)
        let total = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        return Double(count) / max(total, 1e-9)
    }
}

/// Each task's next counter value: 1, 2, 3, …
private actor CounterSource {
    private var values: [Int: UInt32] = [:]

    func next(_ task: Int) -> UInt32 {
        let value = (values[task] ?? 0) + 1
        values[task] = value
        return value
    }
}
