import ServiceLifecycle
import Synchronization

/// Whether the server's store has been prepared (its schema migrated or verified, `AttestationStore.prepare()`), for
/// the services that must not touch the store before: the background jobs.
///
/// Hummingbird starts an application's services together with its server, and the server prepares the store only
/// when it starts (`beforeServerStarts`): without this gate the cleanup and the receipt refresh ran their first round
/// at once, on a schema not yet checked, and a replica whose schema was then refused (`storage.migrations=verify`, a
/// forgotten migration, a rollback) had already deleted rows, claimed keys and called Apple before it exited.
final class StorePreparation: Sendable {
    private struct Waiting {
        var continuations: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        var next: UInt64 = 0
    }

    /// `nil` once prepared; the waiters until then.
    private let state = Mutex<Waiting?>(Waiting())

    /// Records that the store is prepared and lets every waiter go; later calls change nothing.
    func settle() {
        let waiters = state.withLock { state in
            let waiters = state?.continuations.values.map { $0 } ?? []
            state = nil
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Waits until the store is prepared.
    /// - Returns: `true` once it is; `false` when the waiting task is cancelled first.
    func wait() async -> Bool {
        let id: UInt64? = state.withLock { state in
            guard state != nil else { return nil }
            defer { state?.next += 1 }
            return state?.next
        }
        guard let id else { return true }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let answer: Bool? = state.withLock { state in
                    guard state != nil else { return true }
                    if Task.isCancelled { return false }
                    state?.continuations[id] = continuation
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            state.withLock { $0?.continuations.removeValue(forKey: id) }?.resume(returning: false)
        }
    }
}

/// A service run only once the store is prepared (``StorePreparation``); ended by a graceful shutdown or a
/// cancellation that comes first, without running.
struct AfterStorePreparation: Service, CustomStringConvertible {
    let service: any Service
    let preparation: StorePreparation

    /// The wrapped service's description (ServiceLifecycle logs services by it).
    var description: String { String(describing: service) }

    func run() async throws {
        let prepared = await cancelWhenGracefulShutdown { await preparation.wait() }
        guard prepared else { return }
        try await service.run()
    }
}
