import Synchronization

/// Best-effort work bounded in time: what must answer by a deadline whatever its dependency does (the gauges a
/// metrics scrape refreshes from the store).
enum TimeLimit {
    /// `body`'s value, or `nil` when it failed or had not answered by `deadline` (or the caller was cancelled). The
    /// body runs in a task of its own, cancelled then and not waited for: a dependency that does not answer a
    /// cancellation at once (a SQLite caller waiting for a free reader) holds only that task.
    static func value<Value: Sendable>(
        by deadline: ContinuousClock.Instant, _ body: @escaping @Sendable () async throws -> Value
    ) async -> Value? {
        let answer = FirstAnswer<Value>()
        let work = Task { answer.settle(try? await body()) }
        let timer = Task {
            try? await Task.sleep(until: deadline, clock: .continuous)
            answer.settle(nil)
        }
        let value = await withTaskCancellationHandler {
            await answer.value()
        } onCancel: {
            answer.settle(nil)
        }
        work.cancel()
        timer.cancel()
        return value
    }

    /// The first of several outcomes, handed to the one caller waiting for it.
    private final class FirstAnswer<Value: Sendable>: Sendable {
        private struct State {
            /// `nil` until settled; then the outcome, itself `nil` for none.
            var outcome: Value??
            var waiter: CheckedContinuation<Value?, Never>?
        }

        private let state = Mutex(State())

        /// Settles the outcome, unless it was settled already, and resumes the waiter.
        func settle(_ value: Value?) {
            let waiter: CheckedContinuation<Value?, Never>? = state.withLock { state in
                guard state.outcome == nil else { return nil }
                state.outcome = .some(value)
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: value)
        }

        /// Waits for the outcome (one caller).
        func value() async -> Value? {
            await withCheckedContinuation { (continuation: CheckedContinuation<Value?, Never>) in
                let settled: Value?? = state.withLock { state in
                    if let outcome = state.outcome { return .some(outcome) }
                    state.waiter = continuation
                    return nil
                }
                if let settled { continuation.resume(returning: settled) }
            }
        }
    }
}
