import AttestKitTestSupport
import AttestKit
import Foundation
import NIOConcurrencyHelpers
import ServiceLifecycle
import Testing

@testable import AttestKitStore

/// ``PostgresStoreConfiguration/operationTimeout`` against a host that accepts TCP and never answers: calls
/// fail with `storage_unavailable` soon after the deadline, a connection stuck in a query is closed rather
/// than pooled again, and the store still shuts down. No PostgreSQL needed.
@Suite("PostgreSQL operation deadline")
struct PostgresDeadlineTests {
    static let timeout = Duration.seconds(1)

    static func configuration(port: Int) -> PostgresStoreConfiguration {
        PostgresStoreConfiguration(
            host: "127.0.0.1", port: port, username: "attestkit", password: nil, database: "attestkit_test",
            tls: .disable, maximumConnections: 2, connectTimeout: .seconds(60), operationTimeout: timeout)
    }

    /// Runs `body` and returns its `StoreError` and how long it took.
    static func timed(_ body: () async throws -> Void) async -> (error: StoreError?, elapsed: Duration) {
        let start = ContinuousClock.now
        do {
            try await body()
            return (nil, start.duration(to: .now))
        } catch {
            return (error as? StoreError ?? StoreError(.invalidInput, "\(type(of: error))"), start.duration(to: .now))
        }
    }

    @Test(
        "key and consumeChallenge fail with storage_unavailable within the deadline, and the store still closes",
        .timeLimit(.minutes(2)), arguments: [BlackHoleServer.Mode.silent, .silentAfterLogin])
    func blackHole(mode: BlackHoleServer.Mode) async throws {
        let server = try await BlackHoleServer.start(mode)
        let store = try PostgresAttestationStore(configuration: Self.configuration(port: server.port))
        let running = Task { try await store.run() }
        let keyID = TestKeys.key().keyID
        let challengeID = try ChallengeID(bytes: [UInt8](repeating: 7, count: 16))

        let operations: [(String, () async throws -> Void)] = [
            ("reading a key", { _ = try await store.key(keyID) }),
            (
                "consuming a challenge",
                {
                    _ = try await store.consumeChallenge(challengeID, purpose: .attest, keyID: nil, now: TestKeys.t0)
                }
            ),
        ]
        for (name, operation) in operations {
            let (error, elapsed) = await Self.timed(operation)
            print("PostgreSQL deadline (\(mode.testDescription)): \(name) failed after \(elapsed)")
            let failure = try #require(error)
            #expect(failure.code == .storageUnavailable)
            #expect(failure.reason == "\(name) did not answer within 1 s", "\(failure.reason)")
            // The reason above is only given by the deadline (without it, "silent" waits for the 60 s connect
            // timeout, which fails with another reason, and "silent after login" never returns; the connect timeout
            // is that long so that a timer made late by a loaded machine cannot lose a race with it). The caller is
            // answered when the timer fires, whether or not the operation has ended (a query written to a connection
            // that closed meanwhile never ends: see PostgresDeadline); the bound leaves room for a loaded 2-core
            // machine (a full test run once answered after just over 3 s).
            #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(10), "\(elapsed)")
        }

        if mode == .silentAfterLogin {
            // Every connection with a query in flight at its call's deadline was closed, and none took a second
            // query. How many calls got a query out depends on the machine: a loaded one may still be logging in a
            // call's new connection at its deadline (the server then never accepts it, or accepts it late), so more
            // calls are made until one has.
            for _ in 0..<10 where server.seen.queried == 0 {
                let (error, _) = await Self.timed { _ = try await store.key(keyID) }
                #expect(error?.code == .storageUnavailable)
            }
            for _ in 0..<250 where server.seen.queriedClosed < server.seen.queried {
                try await Task.sleep(for: .milliseconds(20))
            }
            let seen = server.seen
            #expect(seen.queried >= 1, "\(seen)")
            #expect(seen.queriedClosed == seen.queried, "\(seen)")
            #expect(seen.reused == 0, "\(seen)")
        }

        await store.close()
        running.cancel()
        let (_, shutdown) = await Self.timed { try? await running.value }
        print("PostgreSQL deadline (\(mode.testDescription)): the store shut down in \(shutdown)")
        #expect(shutdown < .seconds(5), "\(shutdown)")
        let (closedError, _) = await Self.timed { _ = try await store.key(keyID) }
        #expect(closedError?.code == .storageUnavailable)
        await server.stop()
    }

    /// Runs an operation that never ends under `deadline`, as a query whose promise was dropped does (it waits on a
    /// continuation with no cancellation handler), and returns its error and how long the caller waited.
    static func neverEnding(_ deadline: PostgresDeadline) async throws -> (error: StoreError?, elapsed: Duration) {
        let parked = NIOLockedValueBox<CheckedContinuation<Void, Never>?>(nil)
        let answer = await timed {
            _ = try await deadline.run("reading a key") { _ in
                await withCheckedContinuation { continuation in parked.withLockedValue { $0 = continuation } }
                return 1
            }
        }
        for _ in 0..<100 where parked.withLockedValue({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        parked.withLockedValue { $0 }?.resume()
        return answer
    }

    @Test(
        "the caller is answered at the deadline even when the operation never ends (a query on a closed connection)",
        .timeLimit(.minutes(1)))
    func operationThatNeverEnds() async throws {
        let (error, elapsed) = try await Self.neverEnding(PostgresDeadline(timeout: .milliseconds(300)))
        #expect(error?.code == .storageUnavailable)
        #expect(error?.reason == "reading a key did not answer within 0.3 s", "\(error?.reason ?? "")")
        #expect(elapsed >= .milliseconds(250) && elapsed < .seconds(20), "\(elapsed)")
    }

    @Test("the calls of one request share one deadline (StoreRequestDeadline)", .timeLimit(.minutes(2)))
    func requestDeadline() async throws {
        let deadline = PostgresDeadline(timeout: .milliseconds(8_000))
        let (error, elapsed) = try await StoreRequestDeadline.withRequest {
            // An earlier call of the request took 6 s: 2 s are left of the request's 8. (Wide margins: the bound
            // tells "the rest of the request's time" from "a whole timeout" even on a loaded 2-core machine, where
            // the rest of a 4 s request's time once took 2.7 s to be answered.)
            try await Task.sleep(for: .milliseconds(6_000))
            return try await Self.neverEnding(deadline)
        }
        #expect(error?.code == .storageUnavailable)
        #expect(elapsed < .milliseconds(6_000), "\(elapsed)")
        // Nested in another request (middleware around a route), the outer start holds: the request began once.
        let (_, nested) = try await StoreRequestDeadline.withRequest {
            try await Task.sleep(for: .milliseconds(6_000))
            return try await StoreRequestDeadline.withRequest { try await Self.neverEnding(deadline) }
        }
        #expect(nested < .milliseconds(6_000), "\(nested)")
        // Outside a request, each call has the whole timeout.
        let (_, alone) = try await Self.neverEnding(deadline)
        #expect(alone >= .milliseconds(7_900), "\(alone)")
    }

    @Test("the operation timeout: 10 s by default, 1 ms to 1 hour, in seconds in the reason")
    func reasonNamesTheTimeout() async throws {
        #expect(PostgresDeadline.seconds(.seconds(10)) == "10")
        #expect(PostgresDeadline.seconds(.milliseconds(2_500)) == "2.5")
        let defaults = PostgresStoreConfiguration(username: "u", password: nil, database: "d")
        #expect(defaults.operationTimeout == .seconds(10))
        var configuration = Self.configuration(port: 5432)
        configuration.operationTimeout = .zero
        #expect(throws: StoreError.invalidInput) { _ = try PostgresAttestationStore(configuration: configuration) }
        configuration.operationTimeout = .seconds(3_601)
        #expect(throws: StoreError.invalidInput) { _ = try PostgresAttestationStore(configuration: configuration) }
    }

    @Test(
        "a normal run against the real PostgreSQL with operation_timeout from the URL",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func realServer() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let settings = PostgresTestServer.configuration(schema: schema)
        var components = URLComponents()
        components.scheme = "postgres"
        components.user = settings.username
        components.password = settings.password
        components.host = settings.host
        components.port = settings.port
        components.path = "/" + settings.database
        components.queryItems = [
            URLQueryItem(name: "schema", value: settings.schema), URLQueryItem(name: "sslmode", value: "disable"),
            URLQueryItem(name: "operation_timeout", value: "2.5"),
        ]
        let url = try StoreURL(try #require(components.string))
        #expect(url.postgres?.operationTimeout == .milliseconds(2_500))
        let store = try url.makeStore()
        let postgres = try #require(store as? PostgresAttestationStore)
        let gate = PostgresTestServer.shared.gate
        await gate.enter()
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await store.run() }
                defer { group.cancelAll() }
                try await store.prepare()
                let challenge = try await store.issueChallenge(purpose: .attest, now: TestKeys.t0)
                _ = try await store.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: TestKeys.t0)
                let registration = try TestKeys.registration()
                _ = try await store.registerKey(registration, now: TestKeys.t0)
                try await store.advanceCounter(of: registration.keyID, to: 1, now: TestKeys.t0)
                _ = try await store.storeReceipt(
                    try TestKeys.receipt(at: 60, riskMetric: 3), for: registration.keyID, now: TestKeys.t0)
                #expect(try await store.key(registration.keyID)?.counter == 1)
                #expect(try await store.keyCounts().total == 1)
                try? await postgres.dropSchema()
                await store.close()
            }
        } catch {
            try? await postgres.dropSchema()
            await gate.leave()
            throw error
        }
        await gate.leave()
    }
}
