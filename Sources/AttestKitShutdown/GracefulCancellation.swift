package import Logging
package import ServiceLifecycle
import Synchronization

/// Runs a listening service so that cancelling the caller stops it the way a graceful shutdown does.
///
/// A Hummingbird server whose task is cancelled stops reading its listener's queue of accepted connections, and
/// SwiftNIO traps on every accepted connection that was queued and never served ("Deinited NIOAsyncWriter without
/// calling finish()"): the whole process ends with SIGILL. A graceful shutdown closes the listener first and serves
/// what was queued. So the service runs in a `ServiceGroup` of its own in a task that the caller's cancellation
/// does not reach; cancellation triggers that group's graceful shutdown (the listener closes, idle connections
/// close, requests in flight go on) and, ``cancellationGrace`` later, cancels what is left, which is by then safe:
/// nothing is queued behind a closed listener.
///
/// A graceful shutdown of an enclosing `ServiceGroup` reaches the service as before (the task inherits the
/// caller's task-local shutdown context), with no bound of its own: the enclosing group's bounds it, and a
/// cancellation that comes after it (that bound passed, a third signal) cancels the service at once.
package enum GracefulCancellation {
    /// How long requests in flight when the caller is cancelled may still run after the listener closes.
    package static let cancellationGrace: Duration = .seconds(1)

    /// Runs `service` until it returns, its enclosing service group shuts down gracefully, or the caller is
    /// cancelled (then gracefully, cancelled itself ``cancellationGrace`` after).
    ///
    /// - Parameters:
    ///   - service: The service; usually a Hummingbird application.
    ///   - logger: The service group's logger.
    /// - Throws: What the service throws.
    package static func run(_ service: any Service, logger: Logger) async throws {
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [service], gracefulShutdownSignals: [], logger: logger))
        // Not a child task: the caller's cancellation must not reach the server before its listener is closed.
        let running = Task { try await group.run() }
        let shuttingDown = ShutdownFlag()
        try await withTaskCancellationHandler {
            try await withGracefulShutdownHandler {
                try await running.value
            } onGracefulShutdown: {
                shuttingDown.set()
            }
        } onCancel: {
            // Cancelled during a graceful shutdown (its listener closed already): the enclosing group's bound has
            // passed, or the operator insists; nothing is queued, so stop now rather than a second later.
            guard !shuttingDown.isSet else { return running.cancel() }
            Task {
                await group.triggerGracefulShutdown()
                try? await Task.sleep(for: cancellationGrace)
                running.cancel()
            }
        }
    }
}

/// Whether a graceful shutdown reached ``GracefulCancellation/run(_:logger:)``'s caller.
private final class ShutdownFlag: Sendable {
    private let value = Atomic(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}
