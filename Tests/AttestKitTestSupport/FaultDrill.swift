import Foundation
import Synchronization
public import Testing

/// Several workers calling an operation in a closed loop while a ``PostgresCluster`` goes through the faults of
/// issue 13: a restart, a stop, a crash (SIGKILL of the postmaster) and a freeze (SIGSTOP), with a healthy spell
/// before each. Every answer's time and outcome is recorded, so a test can bound the answer time per fault and check
/// that service resumes by itself.
public struct FaultDrill: Sendable {
    /// How one call ended.
    public enum Outcome: Sendable, Equatable, CustomStringConvertible {
        /// The operation did what was asked.
        case success
        /// The store said `storage_unavailable` (HTTP 503): the expected failure while the database is away.
        case unavailable
        /// Anything else: a bug.
        case other(String)

        public var description: String {
            switch self {
            case .success: "success"
            case .unavailable: "unavailable"
            case .other(let text): text
            }
        }
    }

    /// One call.
    public struct Answer: Sendable {
        /// Which worker called.
        public let worker: Int
        /// When the call began.
        public let began: ContinuousClock.Instant
        /// How long it took to answer.
        public let elapsed: Duration
        /// How it ended.
        public let outcome: Outcome
    }

    /// One fault: when it began and when the database was back.
    public struct Fault: Sendable {
        /// `restart`, `stop`, `crash` or `freeze`.
        public let name: String
        /// When the fault was injected.
        public let began: ContinuousClock.Instant
        /// When the database was back (started again, or thawed).
        public let ended: ContinuousClock.Instant
    }

    /// What a drill saw.
    public struct Report: Sendable {
        /// Every call, in the order they ended.
        public let answers: [Answer]
        /// The faults, in order.
        public let faults: [Fault]

        /// The longest answer of calls begun from `fault` until the next fault (or the end).
        public func worst(during fault: Fault) -> Duration {
            let next = faults.first { $0.began > fault.began }?.began
            return answers.filter { answer in
                answer.began >= fault.began && next.map { answer.began < $0 } ?? true
            }.map(\.elapsed).max() ?? .zero
        }

        /// The time from the database's return after `fault` to the first success that began afterwards.
        public func recovery(after fault: Fault) -> Duration? {
            answers.filter { $0.outcome == .success && $0.began >= fault.ended }
                .map { fault.ended.duration(to: $0.began + $0.elapsed) }.min()
        }

        /// The longest answer of all.
        public var worst: Duration { answers.map(\.elapsed).max() ?? .zero }

        /// Calls that ended neither in success nor in `storage_unavailable`.
        public var unexpected: [Answer] {
            answers.filter {
                if case .other = $0.outcome { return true }
                return false
            }
        }

        /// One line per fault: worst answer, recovery, and the count of each outcome.
        public var summary: String {
            let lines = faults.map { fault in
                let recovery = recovery(after: fault).map { "\(Self.seconds($0)) s" } ?? "none"
                return "\(fault.name): worst answer \(Self.seconds(worst(during: fault))) s, back to service "
                    + "\(recovery) after the database"
            }
            let successes = answers.filter { $0.outcome == .success }.count
            let unavailable = answers.filter { $0.outcome == .unavailable }.count
            return (lines + [
                "\(answers.count) calls: \(successes) succeeded, \(unavailable) storage_unavailable, "
                    + "\(unexpected.count) other; worst answer \(Self.seconds(worst)) s"
            ]).joined(separator: "\n")
        }

        /// Prints ``summary`` under `label` and records an issue for each broken promise: an answer other than
        /// success or `storage_unavailable`, one slower than `bound`, a fault after which nothing succeeded, and an
        /// acknowledged counter above the `stored` one (by worker).
        public func check(
            _ label: String, within bound: Duration, acknowledged: Tally, stored: [Int],
            sourceLocation: SourceLocation = #_sourceLocation
        ) {
            print("\(label):\n\(summary)")
            #expect(unexpected.isEmpty, "\(unexpected.prefix(5).map(\.outcome))", sourceLocation: sourceLocation)
            #expect(worst <= bound, "worst answer \(worst)", sourceLocation: sourceLocation)
            for fault in faults {
                #expect(
                    recovery(after: fault) != nil, "nothing succeeded after the \(fault.name)",
                    sourceLocation: sourceLocation)
            }
            #expect(acknowledged.lost(stored).isEmpty, "\(acknowledged.lost(stored))", sourceLocation: sourceLocation)
        }

        static func seconds(_ duration: Duration) -> String {
            let components = duration.components
            let value = Double(components.seconds) + Double(components.attoseconds) / 1e18
            return String(format: "%.2f", value)
        }
    }

    /// The cluster to hurt.
    public let cluster: PostgresCluster
    /// How many workers call at once.
    public let workers: Int
    /// The healthy spell before each fault, and after the last.
    public let healthy: Duration
    /// How long the database stays stopped, crashed or frozen.
    public let outage: Duration
    /// How long, after the last fault, every worker has to succeed once.
    public let recoveryLimit: Duration
    /// How long each worker pauses between calls.
    public let pace: Duration

    /// A drill on `cluster`.
    public init(
        cluster: PostgresCluster, workers: Int = 8, healthy: Duration = .seconds(1), outage: Duration = .seconds(3),
        recoveryLimit: Duration = .seconds(20), pace: Duration = .milliseconds(20)
    ) {
        self.cluster = cluster
        self.workers = workers
        self.healthy = healthy
        self.outage = outage
        self.recoveryLimit = recoveryLimit
        self.pace = pace
    }

    /// Runs the workers through restart, stop, crash and freeze, then until every worker succeeded after the last
    /// fault (or ``recoveryLimit`` passed), and returns what they saw. The database runs when it returns.
    ///
    /// - Parameter operation: One call of `worker` (0 ..< ``workers``); it classifies its own result.
    public func run(_ operation: @escaping @Sendable (_ worker: Int) async -> Outcome) async throws -> Report {
        let shared = Shared()
        let faults = try await withThrowingTaskGroup(of: [Fault].self) { group in
            for worker in 0..<workers {
                group.addTask {
                    while !shared.stop.load(ordering: .relaxed) {
                        let start = ContinuousClock.now
                        let outcome = await operation(worker)
                        let answer = Answer(
                            worker: worker, began: start, elapsed: start.duration(to: .now), outcome: outcome)
                        shared.answers.withLock { $0.append(answer) }
                        // A short pause: the drill needs concurrency, not throughput, and must leave the 2 cores of
                        // CI to the tests that run beside it.
                        try? await Task.sleep(for: pace)
                    }
                    return []
                }
            }
            group.addTask {
                defer { shared.stop.store(true, ordering: .relaxed) }
                return try await injectFaults { worker, since in
                    shared.answers.withLock { answers in
                        answers.contains { $0.worker == worker && $0.outcome == .success && $0.began >= since }
                    }
                }
            }
            var faults: [Fault] = []
            for try await done in group { faults += done }
            return faults
        }
        return Report(answers: shared.answers.withLock { $0 }, faults: faults)
    }

    /// One number per worker, shared by the workers and the test: the counters sent or acknowledged.
    public final class Tally: Sendable {
        private let values: Mutex<[Int]>

        /// A zero per worker.
        public init(workers: Int) {
            values = Mutex([Int](repeating: 0, count: workers))
        }

        /// Adds one to `worker`'s number and returns the new value.
        public func increment(_ worker: Int) -> Int {
            values.withLock { values in
                values[worker] += 1
                return values[worker]
            }
        }

        /// Raises `worker`'s number to `value` if it is lower.
        public func raise(_ worker: Int, to value: Int) {
            values.withLock { $0[worker] = max($0[worker], value) }
        }

        /// The numbers, by worker.
        public var snapshot: [Int] { values.withLock { $0 } }

        /// `worker: acknowledged, stored` for each worker that never got an acknowledgement or whose number is above
        /// its `stored` counter: an acknowledged write that was lost.
        public func lost(_ stored: [Int]) -> [String] {
            zip(snapshot, stored).enumerated().compactMap { worker, pair in
                pair.0 > 0 && pair.0 <= pair.1 ? nil : "\(worker): acknowledged \(pair.0), stored \(pair.1)"
            }
        }
    }

    /// What the workers and the fault injector share.
    private final class Shared: Sendable {
        let answers = Mutex<[Answer]>([])
        let stop = Atomic<Bool>(false)
    }

    /// The faults, each after a healthy spell; then waits until `succeeded(worker, since)` holds for every worker
    /// since the last fault ended.
    private func injectFaults(
        _ succeeded: @Sendable (_ worker: Int, _ since: ContinuousClock.Instant) -> Bool
    ) async throws -> [Fault] {
        var faults: [Fault] = []
        func fault(_ name: String, _ inject: () async throws -> Void, _ heal: () async throws -> Void) async throws {
            try await Task.sleep(for: healthy)
            let began = ContinuousClock.now
            try await inject()
            try await heal()
            faults.append(Fault(name: name, began: began, ended: .now))
        }
        try await fault("restart", { try await cluster.restart() }, {})
        try await fault("stop", { try await cluster.stop() }, { try await pauseThen(cluster.start) })
        try await fault("crash", { try await cluster.kill() }, { try await pauseThen(cluster.start) })
        try await fault("freeze", { try await cluster.freeze() }, { try await pauseThen(cluster.thaw) })
        let last = faults[faults.count - 1].ended
        let deadline = ContinuousClock.now + recoveryLimit
        while ContinuousClock.now < deadline, !(0..<workers).allSatisfy({ succeeded($0, last) }) {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: healthy)
        return faults
    }

    private func pauseThen(_ heal: () async throws -> Void) async throws {
        try await Task.sleep(for: outage)
        try await heal()
    }
}
