import Dispatch
import Foundation
import Synchronization

/// A serial executor that runs its jobs, one at a time in order, on one thread of its own: an actor on it may make
/// blocking system calls (file I/O) without holding a thread of Swift's cooperative pool, which has as many threads
/// as cores and runs every request.
///
/// The thread starts with the executor and ends when the executor is released (no job can be pending then: a job of
/// an actor keeps the actor, and so its executor, alive). It is the ``VerificationRecorder``'s.
final class DedicatedThreadExecutor: SerialExecutor {
    /// The jobs and the signal the thread waits on, shared with the thread (which must not keep the executor).
    private final class Queue: Sendable {
        struct State {
            var jobs: [UnownedJob] = []
            var stopped = false
        }

        let state = Mutex(State())
        let signal = DispatchSemaphore(value: 0)

        /// Runs jobs on `executor` until ``stop()`` and the queue is empty.
        func run(on executor: UnownedSerialExecutor) {
            while true {
                signal.wait()
                let next = state.withLock { state -> UnownedJob?? in
                    if !state.jobs.isEmpty { return state.jobs.removeFirst() }
                    return state.stopped ? .some(nil) : nil
                }
                switch next {
                case .some(.some(let job)): job.runSynchronously(on: executor)
                case .some(.none): return
                case .none: continue
                }
            }
        }

        func append(_ job: UnownedJob) {
            state.withLock { $0.jobs.append(job) }
            signal.signal()
        }

        func stop() {
            state.withLock { $0.stopped = true }
            signal.signal()
        }
    }

    private let queue = Queue()

    /// Starts the thread, named `name` (for debuggers and `top -H`).
    init(name: String) {
        let queue = self.queue
        // The thread holds the executor unowned: it runs jobs only while one is queued, and a queued job keeps its
        // actor, which keeps this executor.
        let executor = UnownedSerialExecutor(ordinary: self)
        let thread = Thread { queue.run(on: executor) }
        thread.name = name
        thread.start()
    }

    deinit {
        queue.stop()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        queue.append(UnownedJob(job))
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
