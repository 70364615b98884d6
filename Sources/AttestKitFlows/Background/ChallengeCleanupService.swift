public import AttestKitStore
public import Foundation
public import Logging
public import ServiceLifecycle

/// Deletes expired challenges at a fixed interval until graceful shutdown.
public struct ChallengeCleanupService: Service, CustomStringConvertible {
    let store: any AttestationStore
    let interval: Duration
    let logger: Logger
    let now: @Sendable () -> Date

    /// Creates the service.
    public init(
        store: any AttestationStore, interval: Duration, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.interval = interval
        self.logger = logger
        self.now = now
    }

    /// `ChallengeCleanupService(interval: 60.0 seconds)`, the name ServiceLifecycle logs it under.
    public var description: String { "ChallengeCleanupService(interval: \(interval))" }

    /// Runs rounds until graceful shutdown or cancellation.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await round()
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// One round: delete what expired; a storage failure is logged and retried next round.
    @discardableResult
    public func round() async -> Int {
        do {
            let deleted = try await store.deleteExpiredChallenges(now: now())
            if deleted > 0 { logger.debug("expired challenges deleted", metadata: ["count": "\(deleted)"]) }
            return deleted
        } catch {
            logger.warning("challenge cleanup failed", metadata: ["code": "\(error.code)"])
            return 0
        }
    }
}
