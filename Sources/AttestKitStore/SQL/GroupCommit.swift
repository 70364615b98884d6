/// Group commit: the single-statement writes of concurrent callers (counter advances, challenge consumptions and
/// issues, registrations, budget takes) applied together, one transaction per batch, each caller answered only
/// once the batch holding its write has committed.
///
/// PostgreSQL's key reads are batched by a second instance the same way (`PostgresExecutor.reads`): the reads of
/// distinct keys that arrive while a batch is out combine into one lookup, and a batch of one runs without a
/// transaction, as a write alone does. Identical reads of one batch (many requests naming one key) are answered
/// by that one lookup too, rather than one statement each (``sharedReads(of:)``).
///
/// Used by SQLite's single writer. A durable commit costs one flush to disk (the WAL `fsync` under
/// `synchronous=FULL`) whatever it holds, so a batch of many writes costs about as much as one. The writes that arrive while a batch
/// is being applied form the next one: under light load a batch holds one write and nothing waits for company;
/// under heavy load the batches grow with the load, up to ``maximumBatch``.
///
/// What a caller sees is unchanged: its statement runs once, in a transaction, with its own result (a
/// compare-and-set that finds its row already taken returns no rows, as before), and it is answered after the
/// commit. A statement that fails fails only its own caller: the applier rolls back, leaves it out, and applies the
/// rest again (``SQLExecutor``'s appliers, ``apply(_:_:)``). When the commit itself fails, every write of the
/// batch fails and none is applied.
///
/// It is owned by its executor and drives itself: a batch starts when a write arrives and fewer than
/// ``concurrentBatches`` are running (one: SQLite's single writer; PostgreSQL's counter advances, and its key reads in
/// a second instance), and the next one as soon as one ends, until nothing is waiting. ``close()`` refuses new writes
/// and returns once the writes already accepted have been answered.
actor GroupCommit<Row: Sendable> {
    /// One write waiting for its batch.
    struct Write: Sendable {
        /// The statement.
        let statement: SQLStatement
        /// When its caller stops waiting, or `nil` if it waits as long as it takes: a write whose caller has already
        /// given up is not applied, and a caller whose deadline passes while its batch is applied, or while it waits
        /// behind another batch, is answered then.
        let end: ContinuousClock.Instant?
        /// How the write combines with others of its kind into one statement, or `nil` when it runs alone.
        let combinable: SQLCombinableWrite?

        /// Creates a write.
        init(statement: SQLStatement, end: ContinuousClock.Instant?, combinable: SQLCombinableWrite? = nil) {
            self.statement = statement
            self.end = end
            self.combinable = combinable
        }
    }

    /// The outcome of one write of a batch: its rows, or why it failed.
    typealias Outcome = Result<[Row], any Error>

    /// Applies one batch in one transaction and returns one outcome per write, in order.
    typealias Applier = @Sendable (_ batch: [Write]) async -> [Outcome]

    private struct Waiting {
        let write: Write
        let continuation: CheckedContinuation<[Row], any Error>
    }

    /// The most writes one batch holds.
    let maximumBatch: Int
    private let apply: Applier
    private var queue: [Waiting] = []
    /// How many batches may be applied at once.
    let concurrentBatches: Int
    private var running = 0
    private var closed = false
    private var drained: [CheckedContinuation<Void, Never>] = []
    private var batches = 0
    private var writes = 0
    /// The callers of the batches being applied whose deadlines differ by more than ``deadlineTolerance``, by
    /// batch: `nil` once a caller was answered at its own deadline.
    private var watched: [Int: [Waiting?]] = [:]
    private var nextBatch = 0
    /// The timer of the queued callers (those waiting behind a running batch) and when it next looks, while one of
    /// them has a deadline: each is answered at its own, not when the batch ahead ends.
    private var queueWatcher: (task: Task<Void, Never>, wakes: ContinuousClock.Instant)?

    /// How far apart the callers' deadlines in one batch may be before the earlier ones are answered by a timer of
    /// the batch's: a caller is answered at most this long after its own deadline.
    static var deadlineTolerance: Duration { .milliseconds(100) }

    /// Creates a group commit that applies batches of at most `maximumBatch` writes with `apply`, at most
    /// `concurrentBatches` at a time (writes to one row in two batches applied at once may then commit in either
    /// order, as two concurrent statements would).
    init(maximumBatch: Int = 256, concurrentBatches: Int = 1, apply: @escaping Applier) {
        self.maximumBatch = max(1, maximumBatch)
        self.concurrentBatches = max(1, concurrentBatches)
        self.apply = apply
    }

    /// Queues `statement` for the next batch and returns its rows once that batch has committed.
    /// - Throws: What the applier gave for this write; ``StoreError/Code/storageUnavailable`` once closed.
    /// - Parameter combinable: How the write combines with concurrent writes of its kind (``SQLCombinableWrite``).
    func submit(
        _ statement: SQLStatement, by end: ContinuousClock.Instant? = nil, combinable: SQLCombinableWrite? = nil
    ) async throws -> [Row] {
        guard !closed else { throw StoreError(.storageUnavailable, "the store is closed") }
        return try await withCheckedThrowingContinuation { continuation in
            queue.append(
                Waiting(
                    write: Write(statement: statement, end: end, combinable: combinable), continuation: continuation))
            if running < concurrentBatches {
                running += 1
                // Detached: the batches belong to no caller and carry none of its task-local values (its deadline).
                Task.detached { await self.drain() }
            } else if let end, queueWatcher.map({ end < $0.wakes }) ?? true {
                // It waits behind a running batch, which may take until its own callers' latest deadline: the queue's
                // timer (started, or moved earlier) answers it at its own. Detached, as the batches are.
                queueWatcher?.task.cancel()
                queueWatcher = (Task.detached { await self.answerExpiredInQueue() }, end)
            }
        }
    }

    /// Refuses new writes and waits until every write already queued has been applied and answered.
    func close() async {
        closed = true
        guard running > 0 else { return }
        await withCheckedContinuation { drained.append($0) }
    }

    /// How many batches and writes were applied so far (tests and benchmarks).
    func counts() -> (batches: Int, writes: Int) { (batches, writes) }

    /// How many writes wait for a batch (tests).
    func queued() -> Int { queue.count }

    /// Applies batches until the queue is empty.
    private func drain() async {
        while !queue.isEmpty {
            let count = min(queue.count, maximumBatch)
            let taken = Array(queue.prefix(count))
            queue.removeFirst(count)
            let now = ContinuousClock.now
            // A caller whose deadline has passed has been answered already: its write is not applied.
            var batch: [Waiting] = []
            for waiting in taken {
                if let end = waiting.write.end, end <= now {
                    waiting.continuation.resume(
                        throwing: StoreError(.storageUnavailable, "the write's deadline passed before its batch"))
                } else {
                    batch.append(waiting)
                }
            }
            guard !batch.isEmpty else { continue }
            // The applier may run until the latest deadline of the batch (a caller near the end of its request's
            // time must not cut the batch short for the others); the earlier callers are answered at theirs.
            let ends = batch.compactMap(\.write.end)
            var watcher: (id: Int, task: Task<Void, Never>)?
            if let earliest = ends.min(), let latest = ends.max(), latest - earliest > Self.deadlineTolerance {
                let id = nextBatch
                nextBatch += 1
                watched[id] = batch
                watcher = (id, Task { await self.answerExpired(of: id) })
            }
            let outcomes = await apply(batch.map(\.write))
            batches += 1
            writes += batch.count
            var unanswered = batch.map(Optional.some)
            if let watcher {
                watcher.task.cancel()
                // Only this loop removes a batch's entry: it is there, with the callers the timer left unanswered.
                unanswered = watched.removeValue(forKey: watcher.id) ?? unanswered
            }
            for (index, waiting) in unanswered.enumerated() {
                guard let waiting else { continue }
                waiting.continuation.resume(
                    with: index < outcomes.count
                        ? outcomes[index]
                        : .failure(StoreError(.storageUnavailable, "the batch gave no outcome for a write")))
            }
        }
        running -= 1
        guard running == 0 else { return }
        let waiters = drained
        drained = []
        waiters.forEach { $0.resume() }
    }

    /// Answers each queued caller whose deadline passes before a batch takes it (drops its write from the queue),
    /// until no queued caller has a deadline; the timer sleeps until the earliest one.
    private func answerExpiredInQueue() async {
        while !Task.isCancelled {
            let now = ContinuousClock.now
            var next: ContinuousClock.Instant?
            queue.removeAll { waiting in
                guard let end = waiting.write.end else { return false }
                guard end > now else {
                    waiting.continuation.resume(
                        throwing: StoreError(.storageUnavailable, "the write's deadline passed before its batch"))
                    return true
                }
                next = min(next ?? end, end)
                return false
            }
            guard let next else {
                queueWatcher = nil
                return
            }
            queueWatcher?.wakes = next
            do {
                try await Task.sleep(until: next, clock: .continuous)
            } catch {
                return  // replaced by a timer for an earlier deadline
            }
        }
    }

    /// Answers each caller of the batch `id` whose deadline passes while the batch is applied, until the batch
    /// ends (and takes its callers back) or the task is cancelled.
    private func answerExpired(of id: Int) async {
        while let waiting = watched[id] {
            let now = ContinuousClock.now
            var next: ContinuousClock.Instant?
            for (index, entry) in waiting.enumerated() {
                guard let entry, let end = entry.write.end else { continue }
                if end <= now {
                    entry.continuation.resume(
                        throwing: StoreError(.storageUnavailable, "the write's batch did not answer by its deadline"))
                    watched[id]?[index] = nil
                } else {
                    next = min(next ?? end, end)
                }
            }
            guard let next else { return }
            do {
                try await Task.sleep(until: next, clock: .continuous)
            } catch {
                return
            }
        }
    }
}

extension GroupCommit {
    /// How many rounds of one batch may start again after a transient error.
    static var transientRetries: Int { 3 }

    /// One statement of a round: a write's own, or the combined statement of several writes of one kind.
    enum Unit: Equatable {
        /// The write at this index, alone.
        case single(Int)
        /// The writes at these indices (distinct targets, same kind), in one statement.
        case combined([Int])
    }

    /// The statements that apply the writes at `indices`, in order: writes that cannot combine alone, then for each
    /// kind of combinable write one statement per round, where round `n` holds the `n`th write to each target (so no
    /// statement writes a row twice, and two writes to one row run in the order they came).
    static func units(_ indices: [Int], of batch: [Write], combining: Bool) -> [Unit] {
        var units: [Unit] = []
        var kinds: [String] = []
        var rounds: [String: [[Int]]] = [:]
        var occurrences: [String: [[UInt8]: Int]] = [:]
        for index in indices {
            guard combining, let write = batch[index].combinable else {
                units.append(.single(index))
                continue
            }
            let round = occurrences[write.kind, default: [:]][write.target, default: 0]
            occurrences[write.kind, default: [:]][write.target] = round + 1
            if rounds[write.kind] == nil { kinds.append(write.kind) }
            var kindRounds = rounds[write.kind] ?? []
            if round == kindRounds.count { kindRounds.append([]) }
            kindRounds[round].append(index)
            rounds[write.kind] = kindRounds
        }
        for kind in kinds {
            for members in rounds[kind] ?? [] {
                units.append(members.count == 1 ? .single(members[0]) : .combined(members))
            }
        }
        return units
    }

    /// The writes of `batch` that run (`leaders`, in order), and for each leader that is a read, the later
    /// identical reads answered with its outcome (`followers`): a read (``SQLCombinableWrite/readOnly``) follows the
    /// first identical one (``SQLCombinableWrite/isSameRead(as:)``, the same statement) unless a write of its kind and
    /// target came between them. Every write leads: no two writes are ever merged, and writes of one target keep
    /// their rounds (``units(_:of:combining:)``). Concurrent reads could not tell the shared answer from their own:
    /// the batch took them all before running any.
    static func sharedReads(of batch: [Write]) -> (leaders: [Int], followers: [Int: [Int]]) {
        var leaders: [Int] = []
        var followers: [Int: [Int]] = [:]
        // The reads that may still lead, by kind and target: a write of that kind and target ends them.
        var open: [String: [[UInt8]: [Int]]] = [:]
        for (index, write) in batch.enumerated() {
            guard let combinable = write.combinable else {
                leaders.append(index)
                continue
            }
            guard combinable.readOnly else {
                open[combinable.kind]?[combinable.target] = nil
                leaders.append(index)
                continue
            }
            let leader = open[combinable.kind]?[combinable.target]?.first { leader in
                let led = batch[leader]
                return led.combinable.map { $0.isSameRead(as: combinable) } == true
                    && led.statement.sql == write.statement.sql && led.statement.prepared == write.statement.prepared
                    && SQLCombinableWrite.sameValues(led.statement.binds, write.statement.binds)
            }
            if let leader {
                followers[leader, default: []].append(index)
            } else {
                open[combinable.kind, default: [:]][combinable.target, default: []].append(index)
                leaders.append(index)
            }
        }
        return (leaders, followers)
    }

    /// Why a round stopped before its commit.
    private enum Interruption {
        /// The write at this index failed: it is answered with its error and left out of the next round.
        case failed(Int)
        /// Run the round again (a transient error, or a combined statement failing: then every write runs alone,
        /// so that the one that fails is found and fails alone).
        case again
    }

    /// Applies `batch` as a database applier does, with `begin`, `run`, `commit` and `rollback` on one connection.
    ///
    /// Writes that can combine (``SQLCombinableWrite``) are applied by one statement per round of distinct targets,
    /// each write getting the returned rows whose target (`target`) is its own; the others run one statement each.
    /// A round of one statement runs on its own (the statement commits itself); a round of several runs in one
    /// transaction. When a statement fails, the transaction is rolled back, that write fails with its error, and
    /// the others run again in a new transaction (each round leaves at least one out, so a batch of `n` takes at
    /// most about `n` rounds); a combined statement that fails is not blamed on any write: the round runs again
    /// with every write alone. A statement that failed with an error for which `transient` holds (a deadlock
    /// between two writers' batches, on a database that reports one) runs again, up to ``transientRetries`` times,
    /// before it fails. When `begin` or `commit` fails, every write still in the round fails with that error.
    /// Identical reads run once, and each gets the outcome of the first (``sharedReads(of:)``).
    static func apply(
        _ batch: [Write],
        begin: () async throws -> Void,
        run: (SQLStatement) async throws -> [Row],
        commit: () async throws -> Void,
        rollback: () async -> Void,
        transient: (any Error) -> Bool = { _ in false },
        target: (Row) -> [UInt8]? = { _ in nil }
    ) async -> [Outcome] {
        var outcomes = [Outcome?](repeating: nil, count: batch.count)
        let (leaders, followers) = sharedReads(of: batch)
        var remaining = leaders
        var retries = 0
        var combining = true
        while !remaining.isEmpty {
            let units = units(remaining, of: batch, combining: combining)
            let inTransaction = units.count > 1
            if inTransaction {
                do {
                    try await begin()
                } catch {
                    remaining.forEach { outcomes[$0] = .failure(error) }
                    break
                }
            }
            var applied: [(Int, [Row])] = []
            var interruption: Interruption?
            for unit in units {
                do {
                    switch unit {
                    case .single(let index):
                        do {
                            applied.append((index, try await run(batch[index].statement)))
                        } catch  where !(transient(error) && retries < transientRetries) {
                            outcomes[index] = .failure(error)
                            interruption = .failed(index)
                        }
                    case .combined(let members):
                        let writes = members.compactMap { batch[$0].combinable }
                        guard let first = writes.first, writes.count == members.count else {
                            interruption = .again
                            combining = false
                            break
                        }
                        do {
                            let rows = try await run(first.combine(writes.map(\.row)))
                            var byTarget: [[UInt8]: [Row]] = [:]
                            for row in rows {
                                if let key = target(row) { byTarget[key, default: []].append(row) }
                            }
                            for (index, write) in zip(members, writes) {
                                applied.append((index, byTarget[write.target] ?? []))
                            }
                        } catch  where !(transient(error) && retries < transientRetries) {
                            combining = false
                            interruption = .again
                        }
                    }
                } catch {
                    retries += 1
                    interruption = .again
                }
                if interruption != nil { break }
            }
            if let interruption {
                if inTransaction { await rollback() }
                if case .failed(let index) = interruption { remaining.removeAll { $0 == index } }
                continue
            }
            if inTransaction {
                do {
                    try await commit()
                } catch {
                    await rollback()
                    remaining.forEach { outcomes[$0] = .failure(error) }
                    break
                }
            }
            applied.forEach { outcomes[$0.0] = .success($0.1) }
            remaining = []
        }
        for (leader, copies) in followers {
            copies.forEach { outcomes[$0] = outcomes[leader] }
        }
        return outcomes.map { $0 ?? .failure(StoreError(.storageUnavailable, "a write of the batch was not applied")) }
    }
}
