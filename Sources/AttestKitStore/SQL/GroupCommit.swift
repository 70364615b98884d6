/// Group commit: the single-statement writes of concurrent callers (counter advances, challenge consumptions and
/// issues, registrations, budget takes) applied together, one transaction per batch, each caller answered only
/// once the batch holding its write has committed.
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
/// It is owned by its executor and drives itself: a batch starts when a write arrives and none is running, and
/// the next one as soon as it ends, until nothing is waiting. ``close()`` refuses new writes and returns once the
/// writes already accepted have been answered.
actor GroupCommit<Row: Sendable> {
    /// One write waiting for its batch.
    struct Write: Sendable {
        /// The statement.
        let statement: SQLStatement
        /// When its caller stops waiting, or `nil` if it waits as long as it takes: a write whose caller has already
        /// given up is not applied.
        let end: ContinuousClock.Instant?
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
    private var running = false
    private var closed = false
    private var drained: [CheckedContinuation<Void, Never>] = []
    private var batches = 0
    private var writes = 0

    /// Creates a group commit that applies batches of at most `maximumBatch` writes with `apply`, one at a time.
    init(maximumBatch: Int = 256, apply: @escaping Applier) {
        self.maximumBatch = max(1, maximumBatch)
        self.apply = apply
    }

    /// Queues `statement` for the next batch and returns its rows once that batch has committed.
    /// - Throws: What the applier gave for this write; ``StoreError/Code/storageUnavailable`` once closed.
    func submit(_ statement: SQLStatement, by end: ContinuousClock.Instant? = nil) async throws -> [Row] {
        guard !closed else { throw StoreError(.storageUnavailable, "the store is closed") }
        return try await withCheckedThrowingContinuation { continuation in
            queue.append(Waiting(write: Write(statement: statement, end: end), continuation: continuation))
            if !running {
                running = true
                // Detached: the batches belong to no caller and carry none of its task-local values (its deadline).
                Task.detached { await self.drain() }
            }
        }
    }

    /// Refuses new writes and waits until every write already queued has been applied and answered.
    func close() async {
        closed = true
        guard running else { return }
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
            let outcomes = await apply(batch.map(\.write))
            batches += 1
            writes += batch.count
            for (index, waiting) in batch.enumerated() {
                waiting.continuation.resume(
                    with: index < outcomes.count
                        ? outcomes[index]
                        : .failure(StoreError(.storageUnavailable, "the batch gave no outcome for a write")))
            }
        }
        running = false
        let waiters = drained
        drained = []
        waiters.forEach { $0.resume() }
    }
}

extension GroupCommit {
    /// How many rounds of one batch may start again after a transient error.
    static var transientRetries: Int { 3 }

    /// Applies `batch` as a database applier does, with `begin`, `run`, `commit` and `rollback` on one connection:
    /// a batch of one runs on its own (the statement commits itself); a larger batch runs in one transaction. When a
    /// statement fails, the transaction is rolled back, that statement fails with its error, and the others run
    /// again in a new transaction (each round leaves at least one out, so a batch of `n` takes at most `n`
    /// rounds). A statement that failed with an error for which `transient` holds (a deadlock between two
    /// writers' batches, on a database that reports one) stays in for up to ``transientRetries`` more rounds before it fails. When `begin` or
    /// `commit` fails, every write still in the round fails with that error.
    static func apply(
        _ batch: [Write],
        begin: () async throws -> Void,
        run: (SQLStatement) async throws -> [Row],
        commit: () async throws -> Void,
        rollback: () async -> Void,
        transient: (any Error) -> Bool = { _ in false }
    ) async -> [Outcome] {
        var outcomes = [Outcome?](repeating: nil, count: batch.count)
        if batch.count == 1, let only = batch.first {
            do {
                return [.success(try await run(only.statement))]
            } catch {
                return [.failure(error)]
            }
        }
        var remaining = Array(batch.indices)
        var retries = 0
        while !remaining.isEmpty {
            do {
                try await begin()
            } catch {
                remaining.forEach { outcomes[$0] = .failure(error) }
                break
            }
            var applied: [(Int, [Row])] = []
            var failed: Int?
            for index in remaining {
                do {
                    applied.append((index, try await run(batch[index].statement)))
                } catch {
                    if transient(error) && retries < transientRetries {
                        retries += 1
                        failed = -1
                    } else {
                        outcomes[index] = .failure(error)
                        failed = index
                    }
                    break
                }
            }
            if let failed {
                await rollback()
                remaining.removeAll { $0 == failed }
                continue
            }
            do {
                try await commit()
                applied.forEach { outcomes[$0.0] = .success($0.1) }
            } catch {
                await rollback()
                remaining.forEach { outcomes[$0] = .failure(error) }
            }
            remaining = []
        }
        return outcomes.map { $0 ?? .failure(StoreError(.storageUnavailable, "a write of the batch was not applied")) }
    }
}
