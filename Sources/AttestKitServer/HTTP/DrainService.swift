public import AttestKitFlows
public import Logging
public import ServiceLifecycle
import Synchronization

/// Drains a replica before its listener closes: on graceful shutdown it starts draining the application
/// (`AttestKitApplication/startDraining()`: `/ready` answers 503 `draining`, every other route is still served),
/// waits for the drain period (`shutdown.drain-period`) or until ``endDrain(shutdownRequested:)`` cuts it short,
/// then returns, and the service group shuts the server down: the listener closes, in-flight requests finish,
/// background services stop.
///
/// A swift-service-lifecycle `Service` that does nothing until graceful shutdown. A `ServiceGroup` shuts its services
/// down in reverse order, each after the one after it has returned, so put it after the server; bound the whole
/// shutdown with the group's `maximumGracefulShutdownDuration` (`shutdown.grace-period`):
///
/// ```swift
/// var group = ServiceGroupConfiguration(
///     services: [server, server.drain], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// group.maximumGracefulShutdownDuration = server.configuration.shutdown.gracePeriod
/// try await ServiceGroup(configuration: group).run()
/// ```
///
/// It logs one line when draining starts and one when the drain ends and the listener closes.
public final class DrainService: Service, Sendable {
    /// Where the drain is in its life.
    private enum Phase {
        case waiting
        case draining
        case over
    }

    private let application: AttestKitApplication
    /// How long requests are still served once draining starts.
    public let drainPeriod: Duration
    private let logger: Logger
    private let phase = Mutex(Phase.waiting)
    private let ends: AsyncStream<Void>
    private let endsContinuation: AsyncStream<Void>.Continuation

    /// Creates the drain of `application`.
    ///
    /// - Parameters:
    ///   - application: Whose `AttestKitApplication.ready()` answers `draining` once draining starts.
    ///   - drainPeriod: How long requests are still served once draining starts; zero ends the drain at once.
    ///   - logger: Where draining and the listener's closing are logged.
    public init(application: AttestKitApplication, drainPeriod: Duration, logger: Logger) {
        self.application = application
        self.drainPeriod = drainPeriod
        self.logger = logger
        (ends, endsContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Waits for graceful shutdown, then drains for ``drainPeriod`` (less when ``endDrain(shutdownRequested:)`` is
    /// called, nothing when the task is cancelled) and returns.
    public func run() async throws {
        try? await gracefulShutdown()
        guard !Task.isCancelled else { return }
        application.startDraining()
        phase.withLock { $0 = .draining }
        logger.notice(
            "draining: /ready answers 503 draining, requests are still served",
            metadata: ["drain_period": "\(drainPeriod)"])
        let ends = self.ends
        let period = drainPeriod
        let cut = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await Task.sleep(for: period)
                return false
            }
            group.addTask {
                for await _ in ends { return true }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        phase.withLock { $0 = .over }
        logger.notice(
            cut || Task.isCancelled
                ? "drain cut short: the listener closes, in-flight requests finish"
                : "drain period over: the listener closes, in-flight requests finish")
    }

    /// Ends the drain now (a second SIGTERM): the listener closes next.
    ///
    /// - Parameter shutdownRequested: Whether graceful shutdown was asked for already (the caller triggered it): then
    ///   a drain that has not started yet (the signals came in quick succession) ends as soon as it starts, rather
    ///   than being skipped by a caller that takes `false` for "stop now".
    /// - Returns: Whether a drain was in progress, or will end as it starts; `false` before graceful shutdown (without
    ///   `shutdownRequested`) and once the drain is over.
    @discardableResult
    public func endDrain(shutdownRequested: Bool = false) -> Bool {
        let ends = phase.withLock { phase in
            switch phase {
            case .draining: true
            case .waiting: shutdownRequested
            case .over: false
            }
        }
        guard ends else { return false }
        endsContinuation.yield()  // kept (the newest one) until the drain reads it
        return true
    }
}
