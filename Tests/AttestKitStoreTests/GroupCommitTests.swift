import AttestKit
import AttestKitTestSupport
import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import AttestKitStore

/// The group commit itself: batching of concurrent writes, one failing statement failing only its own caller, a
/// failed commit failing its whole batch, shutdown draining, and the same on a real SQLite writer.
@Suite("Group commit")
struct GroupCommitTests {
    /// A database stand-in for ``GroupCommit/apply(_:begin:run:commit:rollback:)``: records the calls, fails the
    /// statements whose SQL is `FAIL`, and fails the commits it is told to.
    final class FakeDatabase: Sendable {
        private let state = NIOLockedValueBox<(calls: [String], commitsToFail: Int)>(([], 0))

        init(commitsToFail: Int = 0) {
            state.withLockedValue { $0.commitsToFail = commitsToFail }
        }

        var calls: [String] { state.withLockedValue { $0.calls } }

        func apply(_ batch: [GroupCommit<String>.Write]) async -> [GroupCommit<String>.Outcome] {
            await GroupCommit.apply(
                batch,
                begin: { self.record("BEGIN") },
                run: { statement in
                    self.record(statement.sql)
                    if statement.sql == "FAIL" { throw StoreError(.invalidInput, "failed statement") }
                    return [statement.sql]
                },
                commit: {
                    self.record("COMMIT")
                    let fail = self.state.withLockedValue { state in
                        defer { state.commitsToFail -= 1 }
                        return state.commitsToFail > 0
                    }
                    if fail { throw StoreError(.storageUnavailable, "the disk is full") }
                },
                rollback: { self.record("ROLLBACK") })
        }

        private func record(_ call: String) {
            state.withLockedValue { $0.calls.append(call) }
        }
    }

    static func writes(_ sql: [String]) -> [GroupCommit<String>.Write] {
        sql.map { GroupCommit<String>.Write(statement: SQLStatement($0), end: nil) }
    }

    @Test("a batch runs in one transaction; one write alone runs without one")
    func oneTransaction() async {
        let database = FakeDatabase()
        let outcomes = await database.apply(Self.writes(["a", "b", "c"]))
        #expect(outcomes.map { try? $0.get() } == [["a"], ["b"], ["c"]])
        #expect(database.calls == ["BEGIN", "a", "b", "c", "COMMIT"])

        let single = FakeDatabase()
        let outcome = await single.apply(Self.writes(["a"]))
        #expect(outcome.map { try? $0.get() } == [["a"]])
        #expect(single.calls == ["a"])
    }

    @Test("a failing statement fails only its own write: the others are applied again and committed")
    func failingStatement() async {
        let database = FakeDatabase()
        let outcomes = await database.apply(Self.writes(["a", "FAIL", "b", "FAIL", "c"]))
        #expect(outcomes.map { try? $0.get() } == [["a"], nil, ["b"], nil, ["c"]])
        for index in [1, 3] {
            #expect(throws: StoreError.self) { try outcomes[index].get() }
        }
        // Nothing of a rolled-back round is answered: the successful statements of the committed round only.
        #expect(
            database.calls == [
                "BEGIN", "a", "FAIL", "ROLLBACK", "BEGIN", "a", "b", "FAIL", "ROLLBACK", "BEGIN", "a", "b", "c",
                "COMMIT",
            ])
    }

    @Test("a transient failure (a deadlock) runs the round again, a bounded number of times")
    func transientFailure() async {
        struct Deadlock: Error {}
        let failures = NIOLockedValueBox(0)
        let calls = NIOLockedValueBox<[String]>([])
        func apply(failing times: Int) async -> [GroupCommit<String>.Outcome] {
            failures.withLockedValue { $0 = times }
            calls.withLockedValue { $0 = [] }
            return await GroupCommit.apply(
                Self.writes(["a", "flaky", "b"]),
                begin: { calls.withLockedValue { $0.append("BEGIN") } },
                run: { statement in
                    calls.withLockedValue { $0.append(statement.sql) }
                    if statement.sql == "flaky",
                        failures.withLockedValue({ failures in
                            defer { failures -= 1 }
                            return failures > 0
                        })
                    {
                        throw Deadlock()
                    }
                    return [statement.sql]
                },
                commit: { calls.withLockedValue { $0.append("COMMIT") } },
                rollback: { calls.withLockedValue { $0.append("ROLLBACK") } },
                transient: { $0 is Deadlock })
        }
        let once = await apply(failing: 1)
        #expect(once.map { try? $0.get() } == [["a"], ["flaky"], ["b"]])
        #expect(
            calls.withLockedValue { $0 } == [
                "BEGIN", "a", "flaky", "ROLLBACK", "BEGIN", "a", "flaky", "b", "COMMIT",
            ])
        // Always failing: it fails alone after the retries, the others are committed.
        let always = await apply(failing: 100)
        #expect(always.map { try? $0.get() } == [["a"], nil, ["b"]])
        #expect(calls.withLockedValue { $0.filter { $0 == "flaky" }.count } == GroupCommit<String>.transientRetries + 1)
    }

    /// Writes of the kind `advance` to the targets named, combined by a fake statement `COMBINED x,y`.
    static func combinable(_ targets: [String]) -> [GroupCommit<String>.Write] {
        targets.map { target in
            GroupCommit<String>.Write(
                statement: SQLStatement("alone \(target)"), end: nil,
                combinable: SQLCombinableWrite(
                    kind: "advance", target: Array(target.utf8), row: [.text(target)],
                    combine: { rows in
                        SQLStatement(
                            "COMBINED "
                                + rows.compactMap { row in
                                    if case .text(let text)? = row.first { return text } else { return nil }
                                }.joined(separator: ","))
                    }))
        }
    }

    /// Applies `batch` on a fake database whose combined statements return one row per target (`FAIL` fails the
    /// statement holding it, `NONE` returns no row, as a compare-and-set that refuses) and which records its calls.
    static func applyCombining(_ batch: [GroupCommit<String>.Write]) async -> (
        outcomes: [GroupCommit<String>.Outcome], calls: [String]
    ) {
        let calls = NIOLockedValueBox<[String]>([])
        let outcomes = await GroupCommit.apply(
            batch,
            begin: { calls.withLockedValue { $0.append("BEGIN") } },
            run: { statement in
                calls.withLockedValue { $0.append(statement.sql) }
                let targets =
                    statement.sql.hasPrefix("COMBINED ")
                    ? statement.sql.dropFirst("COMBINED ".count).split(separator: ",").map(String.init)
                    : [String(statement.sql.split(separator: " ").last ?? "")]
                if targets.contains("FAIL") { throw StoreError(.invalidInput, "failed statement") }
                return targets.filter { $0 != "NONE" }
            },
            commit: { calls.withLockedValue { $0.append("COMMIT") } },
            rollback: { calls.withLockedValue { $0.append("ROLLBACK") } },
            target: { row in Array(row.utf8) })
        return (outcomes, calls.withLockedValue { $0 })
    }

    @Test("writes of one kind to distinct targets run as one statement; a second write to a target runs after")
    func combinedRounds() async {
        let batch = Self.combinable(["a", "b"]) + Self.writes(["other"]) + Self.combinable(["a", "c", "NONE"])
        #expect(
            GroupCommit.units(Array(batch.indices), of: batch, combining: true) == [
                .single(2), .combined([0, 1, 4, 5]), .single(3),
            ])
        let (outcomes, calls) = await Self.applyCombining(batch)
        #expect(calls == ["BEGIN", "other", "COMBINED a,b,c,NONE", "alone a", "COMMIT"])
        // Each write gets the rows of its own target, and a refused compare-and-set none.
        #expect(outcomes.map { try? $0.get() } == [["a"], ["b"], ["other"], ["a"], ["c"], []])

        // Alone, a combined round is one statement without a transaction (it commits itself).
        let (alone, aloneCalls) = await Self.applyCombining(Self.combinable(["x", "y"]))
        #expect(aloneCalls == ["COMBINED x,y"])
        #expect(alone.map { try? $0.get() } == [["x"], ["y"]])
    }

    @Test("a combined statement that fails blames no write: the round runs again with each write alone")
    func combinedFailure() async {
        let (outcomes, calls) = await Self.applyCombining(Self.combinable(["a", "FAIL", "b"]))
        #expect(outcomes.map { try? $0.get() } == [["a"], nil, ["b"]])
        #expect(throws: StoreError.self) { try outcomes[1].get() }
        #expect(
            calls == [
                "COMBINED a,FAIL,b", "BEGIN", "alone a", "alone FAIL", "ROLLBACK", "BEGIN", "alone a", "alone b",
                "COMMIT",
            ])
    }

    @Test(
        "concurrent counter advances on a real database: combined, each caller gets its own key, copies pass once",
        arguments: await StoreBackend.durable())
    func combinedCounterAdvances(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            var keys: [KeyID] = []
            for _ in 0..<48 {
                keys.append(try await store.registerKey(TestKeys.registration(), now: TestKeys.t0).keyID)
            }
            // Three concurrent copies of counter 1 for every key: exactly one of each key's copies advances it.
            let winners = try await withThrowingTaskGroup(of: (KeyID, KeyRecord?).self) { group in
                for key in keys {
                    for _ in 0..<3 {
                        group.addTask {
                            do {
                                return (key, try await store.advanceCounter(of: key, to: 1, now: TestKeys.t0))
                            } catch let error as StoreError {
                                #expect(error.code == .counterNotIncreasing)
                                return (key, nil)
                            }
                        }
                    }
                }
                var winners: [KeyID: [KeyRecord]] = [:]
                for try await (key, record) in group { winners[key, default: []] += record.map { [$0] } ?? [] }
                return winners
            }
            for key in keys {
                #expect(winners[key]?.count == 1)
                #expect(winners[key]?.first?.keyID == key)
                #expect(winners[key]?.first?.counter == 1)
                #expect(try await store.key(key)?.counter == 1)
            }
            let counts: (batches: Int, writes: Int)
            let direct: [KeyID]
            switch store {
            case let sqlite as SQLiteAttestationStore:
                counts = await sqlite.executor.commits.counts()
                direct = try await Self.advanceTogether(keys, to: 2, on: sqlite.executor)
            case let postgres as PostgresAttestationStore:
                counts = await postgres.executor.commits.counts()
                direct = try await Self.advanceTogether(keys, to: 2, on: postgres.executor)
            default:
                Issue.record("not an SQL store: \(store)")
                return
            }
            // The combined statement itself: every key but the revoked one advanced, returned whole.
            #expect(Set(direct) == Set(keys.dropFirst()))
            #expect(try await store.key(keys[1])?.counter == 2)
            #expect(try await store.key(keys[0])?.counter == 1)
            #expect(counts.writes >= keys.count * 3)
            #expect(counts.batches < counts.writes, "\(counts)")
        }
    }

    @Test(
        "PostgreSQL: concurrent key reads are answered together, each caller with its own key (or none), copies too",
        .enabled(PostgresBackendTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func combinedKeyReads() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        try await StoreBackend.postgres.withStore { store in
            let postgres = try #require(store as? PostgresAttestationStore)
            var keys: [KeyID] = []
            for _ in 0..<40 {
                keys.append(try await store.registerKey(TestKeys.registration(), now: TestKeys.t0).keyID)
            }
            _ = try await store.revokeKey(keys[3], now: TestKeys.t0)
            let unknown = try KeyID(bytes: Array(repeating: 0xAB, count: 32))
            // Every key read twice at once, and an unknown key: each answer is the caller's own key.
            let asked = keys + keys + [unknown]
            let answers = try await withThrowingTaskGroup(of: (KeyID, KeyRecord?).self) { group in
                for key in asked {
                    group.addTask { (key, try await store.keyWithoutReceipt(key)) }
                }
                var answers: [(KeyID, KeyRecord?)] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(answers.count == asked.count)
            for (key, record) in answers {
                if key == unknown {
                    #expect(record == nil)
                } else {
                    #expect(record?.keyID == key)
                    #expect(record?.receipt == nil)
                    #expect(record?.state == (key == keys[3] ? .revoked : .active))
                }
            }
            let counts = await postgres.executor.reads.counts()
            #expect(counts.writes == asked.count)
            #expect(counts.batches < counts.writes, "\(counts)")
            // The combined statement itself: the keys asked for that exist, none twice.
            let sql = SQLStore(executor: postgres.executor)
            let rows = try await postgres.executor.query(
                "reading keys", sql.readingKeys((keys.prefix(5) + [unknown]).map { [.bytes($0.bytes)] }), access: .read)
            #expect(Set(try rows.map { try $0.keyRecord().keyID }) == Set(keys.prefix(5)))
        }
    }

    @Test(
        "a caller whose deadline comes before its batch ends is answered at its own; the others wait for their rows",
        .timeLimit(.minutes(1)))
    func earlierDeadlinesAreAnsweredAtTheirOwn() async throws {
        let lateAnswered = NIOLockedValueBox(false)
        let commits = GroupCommit<String>(maximumBatch: 8) { batch in
            // The first batch holds the others back so that they form one batch; that one lasts until the late
            // caller was answered, or 20 s (what the caller waits without its own deadline).
            if batch.first?.statement.sql == "first" {
                try? await Task.sleep(for: .milliseconds(300))
            } else {
                for _ in 0..<2_000 where !lateAnswered.withLockedValue({ $0 }) {
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            return batch.map { .success([$0.statement.sql]) }
        }
        let start = ContinuousClock.now
        async let first = commits.submit(SQLStatement("first"))
        try await Task.sleep(for: .milliseconds(100))
        let late = Task { () -> (Result<[String], any Error>, Duration) in
            defer { lateAnswered.withLockedValue { $0 = true } }
            do {
                let rows = try await commits.submit(SQLStatement("late"), by: .now + .milliseconds(500))
                return (.success(rows), ContinuousClock.now - start)
            } catch {
                return (.failure(error), ContinuousClock.now - start)
            }
        }
        let healthy = Task { try await commits.submit(SQLStatement("healthy"), by: .now + .seconds(30)) }
        #expect(try await first == ["first"])
        let (answer, elapsed) = await late.value
        // Answered at its deadline (about 0.6 s from the start), not when the batch ends (20 s without the timer).
        #expect((answer.error as? StoreError)?.code == .storageUnavailable, "\(answer)")
        #expect(elapsed < .seconds(15), "\(elapsed)")
        #expect(try await healthy.value == ["healthy"])
        #expect(await commits.counts().batches == 2)
    }

    @Test(
        "a caller queued behind a running batch is answered at its own deadline, not when that batch ends",
        .timeLimit(.minutes(1)))
    func queuedDeadlinesAreAnsweredAtTheirOwn() async throws {
        let queuedAnswered = NIOLockedValueBox(false)
        let commits = GroupCommit<String>(maximumBatch: 8) { batch in
            // The first batch (a frozen database) lasts until the queued caller was answered, or 20 s.
            if batch.first?.statement.sql == "running" {
                for _ in 0..<2_000 where !queuedAnswered.withLockedValue({ $0 }) {
                    try? await Task.sleep(for: .milliseconds(10))
                }
            }
            return batch.map { .success([$0.statement.sql]) }
        }
        let start = ContinuousClock.now
        let running = Task { try await commits.submit(SQLStatement("running"), by: .now + .seconds(30)) }
        try await Task.sleep(for: .milliseconds(100))
        while await commits.queued() > 0 { try await Task.sleep(for: .milliseconds(10)) }  // the batch is out
        let queued = Task { () -> (Result<[String], any Error>, Duration) in
            defer { queuedAnswered.withLockedValue { $0 = true } }
            do {
                let rows = try await commits.submit(SQLStatement("queued"), by: .now + .milliseconds(300))
                return (.success(rows), ContinuousClock.now - start)
            } catch {
                return (.failure(error), ContinuousClock.now - start)
            }
        }
        let (answer, elapsed) = await queued.value
        // Answered at its deadline (about 0.4 s from the start), not when the running batch ends (20 s).
        #expect((answer.error as? StoreError)?.code == .storageUnavailable, "\(answer)")
        #expect(elapsed < .seconds(15), "\(elapsed)")
        #expect(try await running.value == ["running"])
        let counts = await commits.counts()
        #expect(counts.batches == 1 && counts.writes == 1, "the queued write was not applied: \(counts)")
    }

    @Test("a failed commit fails every write of its batch")
    func failedCommit() async {
        let database = FakeDatabase(commitsToFail: 1)
        let outcomes = await database.apply(Self.writes(["a", "b"]))
        for outcome in outcomes {
            #expect(throws: StoreError.self) { try outcome.get() }
        }
        #expect(database.calls == ["BEGIN", "a", "b", "COMMIT", "ROLLBACK"])
    }

    /// Submits `count` writes at once to a group commit whose batches take `pause` each, and returns each write's
    /// rows, the counts, and the most batches that were being applied at one time.
    static func submitConcurrently(
        _ count: Int, maximumBatch: Int, concurrentBatches: Int, pause: Duration
    ) async throws -> (
        answers: [Int: [String]], counts: (batches: Int, writes: Int), most: Int, commits: GroupCommit<String>
    ) {
        let active = NIOLockedValueBox((now: 0, most: 0))
        let commits = GroupCommit<String>(maximumBatch: maximumBatch, concurrentBatches: concurrentBatches) { batch in
            active.withLockedValue { state in
                state.now += 1
                state.most = max(state.most, state.now)
            }
            try? await Task.sleep(for: pause)
            active.withLockedValue { $0.now -= 1 }
            return batch.map { .success([$0.statement.sql]) }
        }
        let answers = try await withThrowingTaskGroup(of: (Int, [String]).self) { group in
            for index in 0..<count {
                group.addTask { (index, try await commits.submit(SQLStatement("w\(index)"))) }
            }
            var answers: [Int: [String]] = [:]
            for try await (index, rows) in group { answers[index] = rows }
            return answers
        }
        return (answers, await commits.counts(), active.withLockedValue { $0.most }, commits)
    }

    @Test("many concurrent writers: each gets its own rows, in fewer batches than writes, at most one batch at a time")
    func manyWriters() async throws {
        let count = 400
        let run = try await Self.submitConcurrently(
            count, maximumBatch: 16, concurrentBatches: 1, pause: .milliseconds(2))
        #expect(run.answers.count == count)
        #expect((0..<count).allSatisfy { run.answers[$0] == ["w\($0)"] })
        #expect(run.counts.writes == count)
        #expect(run.counts.batches < count && run.counts.batches >= count / 16, "\(run.counts)")
        #expect(run.most == 1)
    }

    @Test("with concurrent batches allowed (PostgreSQL): never more at once than allowed, every write answered once")
    func concurrentBatches() async throws {
        let count = 300
        let run = try await Self.submitConcurrently(
            count, maximumBatch: 8, concurrentBatches: 3, pause: .milliseconds(5))
        let commits = run.commits
        #expect((0..<count).allSatisfy { run.answers[$0] == ["w\($0)"] })
        #expect(run.counts.writes == count)
        #expect(run.most > 1 && run.most <= 3, "\(run.most) batches at once")
        await commits.close()
        let refused = await #expect(throws: StoreError.self) { _ = try await commits.submit(SQLStatement("after")) }
        #expect(refused?.code == .storageUnavailable)
    }

    @Test("a write whose deadline has passed before its batch is refused without being applied")
    func expiredWrite() async throws {
        let applied = NIOLockedValueBox<[String]>([])
        let commits = GroupCommit<String> { batch in
            applied.withLockedValue { $0 += batch.map(\.statement.sql) }
            return batch.map { .success([$0.statement.sql]) }
        }
        let error = await #expect(throws: StoreError.self) {
            _ = try await commits.submit(SQLStatement("late"), by: .now - .seconds(1))
        }
        #expect(error?.code == .storageUnavailable)
        #expect(try await commits.submit(SQLStatement("on time"), by: .now + .seconds(60)) == ["on time"])
        #expect(applied.withLockedValue { $0 } == ["on time"])
    }

    @Test("close answers every write already queued, then refuses new ones")
    func closeDrains() async throws {
        let gate = AsyncGate()
        let commits = GroupCommit<String> { batch in
            await gate.wait()
            return batch.map { .success([$0.statement.sql]) }
        }
        let writers = (0..<50).map { index in
            Task { try await commits.submit(SQLStatement("w\(index)")) }
        }
        // Let every writer queue behind the first batch, which waits for the gate.
        for _ in 0..<200 where await commits.queued() < 49 { try await Task.sleep(for: .milliseconds(5)) }
        let closing = Task { await commits.close() }
        try await Task.sleep(for: .milliseconds(20))
        await gate.open()
        await closing.value
        for (index, writer) in writers.enumerated() {
            #expect(try await writer.value == ["w\(index)"])
        }
        let refused = await #expect(throws: StoreError.self) { _ = try await commits.submit(SQLStatement("after")) }
        #expect(refused?.code == .storageUnavailable)
    }

    @Test(
        "concurrent writes with failing statements among them, on a real database: the others are committed",
        arguments: await StoreBackend.durable())
    func mixedBatches(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let count = 120
            let outcomes: [Int: Bool]
            switch store {
            case let sqlite as SQLiteAttestationStore:
                outcomes = await Self.mixedWrites(count, on: sqlite.executor)
                let counts = await sqlite.executor.commits.counts()
                #expect(counts.writes >= count)
                #expect(counts.batches < counts.writes, "\(counts)")
            case let postgres as PostgresAttestationStore:
                // PostgreSQL's writes run concurrently on the pool (its own WAL flushes group concurrent commits).
                outcomes = await Self.mixedWrites(count, on: postgres.executor)
            default:
                Issue.record("not an SQL store: \(store)")
                return
            }
            #expect((0..<count).allSatisfy { outcomes[$0] == ($0 % 5 != 2) })
            // Exactly the successful writes are in the database.
            let expired = try await store.deleteExpiredChallenges(now: Date(timeIntervalSince1970: 1))
            #expect(expired == count - count / 5)
        }
    }

    /// Revokes the first of `keys`, then runs the combined counter advance of all of them to `counter` as one
    /// statement, and returns the keys it says it advanced (read from the returned rows).
    static func advanceTogether<Executor: SQLExecutor>(
        _ keys: [KeyID], to counter: Int64, on executor: Executor
    ) async throws -> [KeyID] {
        let sql = SQLStore(executor: executor)
        _ = try await sql.revokeKey(keys[0], now: TestKeys.t0)
        let statement = sql.advancingCounters(
            keys.map { [.bytes($0.bytes), .integer(counter), .integer(1), .integer(0)] })
        let rows = try await executor.query("advancing counters", statement, access: .write)
        return try rows.map { row in try row.keyRecord().keyID }
    }

    /// Issues `count` challenges at once through `executor`'s group commit; every fifth breaks a NOT NULL constraint.
    /// Returns whether each succeeded.
    static func mixedWrites<Executor: SQLExecutor>(_ count: Int, on executor: Executor) async -> [Int: Bool] {
        let (table, dialect) = (executor.table("challenges"), executor.dialect)
        let sql = """
            INSERT INTO \(table) (id, challenge, purpose, key_id, created_at_ms, expires_at_ms)
            VALUES (\(dialect.parameter(1)), \(dialect.parameter(2)), 'attest', NULL, 0, 1) RETURNING id
            """
        return await withTaskGroup(of: (Int, Bool).self) { group in
            for index in 0..<count {
                group.addTask {
                    let id: [UInt8]? = index % 5 == 2 ? nil : Array(repeating: UInt8(index), count: 16)
                    let statement = SQLStatement(sql, [.bytes(id), .bytes(Array(repeating: 7, count: 32))])
                    do {
                        let rows = try await executor.query("issuing a challenge", statement, access: .write)
                        return (index, rows.count == 1)
                    } catch {
                        #expect((error as? StoreError)?.code == .storageUnavailable)
                        return (index, false)
                    }
                }
            }
            var outcomes: [Int: Bool] = [:]
            for await (index, ok) in group { outcomes[index] = ok }
            return outcomes
        }
    }

    @Test("SQLite: every acknowledged write of the batches is in the file, read by a new connection")
    func sqliteDurable() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("store.sqlite").path
        let pool = SQLiteConnectionPool(
            path: path, readerCount: 2, busyTimeoutMilliseconds: 5_000, migrations: .apply, logger: StoreLogging.silent)
        let executor = SQLiteExecutor(pool: pool)
        try await pool.prepare()
        let count = 120
        let outcomes = await Self.mixedWrites(count, on: executor)
        #expect((0..<count).allSatisfy { outcomes[$0] == ($0 % 5 != 2) })
        let counts = await executor.commits.counts()
        #expect(counts.writes == count)
        #expect(counts.batches < count, "\(counts)")
        await executor.commits.close()
        await pool.close()

        let reopened = SQLiteAttestationStore(path: path)
        let expired = try await reopened.deleteExpiredChallenges(now: Date(timeIntervalSince1970: 1))
        #expect(expired == count - count / 5)
        await reopened.close()
    }
}

/// A gate that writers wait at until it is opened.
actor AsyncGate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        guard !isOpen else { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        waiters.forEach { $0.resume() }
        waiters = []
    }
}

extension Result {
    /// The failure, if any.
    fileprivate var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
