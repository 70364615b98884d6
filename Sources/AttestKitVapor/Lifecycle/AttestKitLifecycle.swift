import AttestKitFlows
import AttestKitStore
import Logging
import ServiceLifecycle
import Synchronization
public import Vapor

/// Runs AttestKit's long-lived parts with the Vapor application: the store (a swift-service-lifecycle `Service`,
/// run in a task and prepared on boot, closed on shutdown) and the application's background services
/// (`AttestKitApplication.backgroundServices`: the challenge cleanup and, with Apple's receipt exchange, the receipt
/// refresh, with the application's configured intervals, metrics, logger and clock).
///
/// ```swift
/// app.attestKit = try AttestKitIntegration(application)
/// app.lifecycle.use(AttestKitLifecycle())
/// ```
///
/// On shutdown it marks the application draining first (`AttestKitApplication/startDraining()`), so that `/ready`
/// answers 503 `draining` from then on, then stops Vapor's server (no new connection; the requests in flight are
/// answered, within the server's `shutdownTimeout`) before it closes the store: Vapor runs the lifecycle's shutdown
/// before it stops its own server, and a store closed under a serving listener would answer every request in the
/// meantime 503 `storage_unavailable` (a registration losing its challenge). Vapor has no drain period of its own: a
/// deployment that wants one calls `app.attestKit?.application.startDraining()` when it is told to stop, keeps
/// serving for the drain period while its load balancer sees `/ready` fail, then stops the application (see
/// docs/operations.md, "Draining and rolling restarts").
public final class AttestKitLifecycle: LifecycleHandler, Sendable {
    private let running = Mutex<Running?>(nil)

    private struct Running: Sendable {
        let storeTask: Task<Void, Never>
        var background: (group: ServiceGroup, task: Task<Void, Never>)?
    }

    /// Creates the handler; the application comes from `app.attestKit` at boot.
    public init() {}

    /// Runs the store, prepares it (its schema) before the server accepts requests, then starts the background
    /// services.
    /// - Throws: `attestkit_not_configured` without `app.attestKit`; the store's `storage_unavailable`.
    public func willBootAsync(_ application: Application) async throws {
        guard let integration = application.attestKit else { throw FlowError.notConfiguredVapor }
        let attestKit = integration.application
        let logger = application.logger
        let store = attestKit.store
        let storeTask = Task {
            do {
                try await store.run()
            } catch {
                logger.error("AttestKit store stopped", metadata: ["error": "\(error)"])
            }
        }
        running.withLock { $0 = Running(storeTask: storeTask, background: nil) }
        do {
            try await store.prepare()
        } catch {
            await shutdownAsync(application)
            throw AttestKitAbort(attestKit.failure(error))
        }
        let group = ServiceGroup(services: attestKit.backgroundServices, logger: logger)
        let task = Task {
            do {
                try await group.run()
            } catch {
                logger.error("AttestKit background services stopped", metadata: ["error": "\(error)"])
            }
        }
        running.withLock { $0?.background = (group, task) }
    }

    /// Marks the application draining (`/ready` answers 503 `draining`), stops the server (its requests in flight
    /// answered), shuts the background services down gracefully and waits for them, then closes the store.
    public func shutdownAsync(_ application: Application) async {
        application.attestKit?.application.startDraining()
        // Stopping a server twice is nothing: Vapor's own shutdown, after this, finds it stopped.
        await application.server.shutdown()
        guard
            let running = running.withLock({ state in
                defer { state = nil }
                return state
            })
        else { return }
        if let (group, task) = running.background {
            await group.triggerGracefulShutdown()
            await task.value
        }
        await application.attestKit?.application.settleRecording()
        await application.attestKit?.application.store.close()
        // A store's client may wait for cancellation rather than graceful shutdown: end it either way.
        running.storeTask.cancel()
        await running.storeTask.value
    }
}
