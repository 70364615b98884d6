import Synchronization

/// The port the server bound, for callers that started it on port 0; waiters wake when it binds or fails.
final class PortPromise: Sendable {
    private enum State {
        case pending([CheckedContinuation<Int, any Error>])
        case settled(Result<Int, any Error>)
    }

    private let state = Mutex(State.pending([]))

    /// Settles the promise once; later calls are ignored.
    func settle(_ result: Result<Int, any Error>) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int, any Error>] in
            guard case .pending(let waiters) = state else { return [] }
            state = .settled(result)
            return waiters
        }
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// The port once bound, or the failure that prevented it.
    func value() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            let settled = state.withLock { state -> Result<Int, any Error>? in
                switch state {
                case .pending(let waiters):
                    state = .pending(waiters + [continuation])
                    return nil
                case .settled(let result):
                    return result
                }
            }
            if let settled { continuation.resume(with: settled) }
        }
    }
}
