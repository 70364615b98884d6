import NIOConcurrencyHelpers

/// The port a server bound, awaited by anyone who wants to call it; or why it never bound.
final class PortPromise: Sendable {
    private enum State {
        case pending([CheckedContinuation<Int, any Error>])
        case bound(Int)
        case failed(MockAppleError)
    }

    private let state = NIOLockedValueBox(State.pending([]))

    /// Records the bound port and wakes every waiter.
    func fulfil(_ port: Int) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Int, any Error>] in
            guard case .pending(let waiters) = state else { return [] }
            state = .bound(port)
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
    }

    /// Records that the server will not bind (any more) and wakes every waiter with `error`.
    func fail(_ error: MockAppleError) {
        let waiters = state.withLockedValue { state -> [CheckedContinuation<Int, any Error>] in
            guard case .pending(let waiters) = state else { return [] }
            state = .failed(error)
            return waiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }

    /// The port, once bound.
    func wait() async throws -> Int {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int, any Error>) in
            let outcome = state.withLockedValue { state -> Result<Int, MockAppleError>? in
                switch state {
                case .pending(let waiters):
                    state = .pending(waiters + [continuation])
                    return nil
                case .bound(let port): return .success(port)
                case .failed(let error): return .failure(error)
                }
            }
            if let outcome { continuation.resume(with: outcome) }
        }
    }
}
