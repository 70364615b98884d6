public import AttestKit
public import AttestKitApple
import AttestKitFlows
import AttestKitStore
import Logging
import ServiceLifecycle
import Synchronization
public import Vapor

/// Runs AttestKit's long-lived parts with the Vapor application: the store (a swift-service-lifecycle `Service`,
/// run in a task and prepared on boot, closed on shutdown), the challenge cleanup, and the receipt refresh when
/// given Apple's receipt exchange clients.
///
/// ```swift
/// app.attestKit = AttestKitServices(store: store, verifier: verifier)
/// app.lifecycle.use(AttestKitLifecycle())
/// ```
public final class AttestKitLifecycle: LifecycleHandler, Sendable {
    /// Apple's receipt exchange per environment; empty: no receipt refresh.
    public let receiptExchange: [AppAttestEnvironment: ReceiptExchangeClient]
    /// The time between cleanup rounds.
    public let cleanupInterval: Duration
    /// The time between receipt refresh rounds.
    public let refreshInterval: Duration
    private let running = Mutex<Running?>(nil)

    private struct Running: Sendable {
        let storeTask: Task<Void, Never>
        var background: (group: ServiceGroup, task: Task<Void, Never>)?
    }

    /// Creates the handler; the flows come from `app.attestKit` at boot.
    public init(
        receiptExchange: [AppAttestEnvironment: ReceiptExchangeClient] = [:], cleanupInterval: Duration = .seconds(60),
        refreshInterval: Duration = .seconds(3_600)
    ) {
        self.receiptExchange = receiptExchange
        self.cleanupInterval = cleanupInterval
        self.refreshInterval = refreshInterval
    }

    /// Runs the store, prepares it (its schema) before the server accepts requests, then starts the background
    /// services.
    /// - Throws: `attestkit_not_configured` without `app.attestKit`; the store's `storage_unavailable`.
    public func willBootAsync(_ application: Application) async throws {
        guard let services = application.attestKit else { throw FlowError.notConfiguredVapor }
        let logger = application.logger
        let store = services.store
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
            throw AttestKitAbort(FlowError(error))
        }
        var members: [any Service] = [
            ChallengeCleanupService(store: store, interval: cleanupInterval, logger: logger)
        ]
        if !receiptExchange.isEmpty {
            members.append(
                ReceiptRefreshService(
                    store: store, exchange: receiptExchange, interval: refreshInterval, batch: 100,
                    riskThreshold: services.policy.riskMetricThreshold, metrics: FlowMetrics(), logger: logger))
        }
        let group = ServiceGroup(services: members, logger: logger)
        let task = Task {
            do {
                try await group.run()
            } catch {
                logger.error("AttestKit background services stopped", metadata: ["error": "\(error)"])
            }
        }
        running.withLock { $0?.background = (group, task) }
    }

    /// Shuts the background services down gracefully and waits for them, then closes the store.
    public func shutdownAsync(_ application: Application) async {
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
        await application.attestKit?.store.close()
        // A store's client may wait for cancellation rather than graceful shutdown: end it either way.
        running.storeTask.cancel()
        await running.storeTask.value
    }
}
