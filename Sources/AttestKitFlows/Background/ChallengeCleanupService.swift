public import AttestKitStore
public import Foundation
public import Logging
public import ServiceLifecycle

/// Deletes expired challenges, the records of consumed tokens that expired and the expired dashboard sessions, at a
/// fixed interval until graceful shutdown.
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
    /// - Returns: How many challenges, token records and dashboard sessions were deleted.
    @discardableResult
    public func round() async -> Int {
        let time = now()
        var deleted = 0
        do {
            let challenges = try await store.deleteExpiredChallenges(now: time)
            if challenges > 0 { logger.debug("expired challenges deleted", metadata: ["count": "\(challenges)"]) }
            deleted += challenges
        } catch {
            logger.warning("challenge cleanup failed", metadata: ["code": "\(error.code)"])
        }
        do {
            let tokens = try await store.deleteExpiredTokens(now: time)
            if tokens > 0 { logger.debug("expired token records deleted", metadata: ["count": "\(tokens)"]) }
            deleted += tokens
        } catch {
            logger.warning("token record cleanup failed", metadata: ["code": "\(error.code)"])
        }
        do {
            let sessions = try await store.deleteExpiredDashboardSessions(now: time)
            if sessions > 0 { logger.debug("expired dashboard sessions deleted", metadata: ["count": "\(sessions)"]) }
            deleted += sessions
        } catch {
            logger.warning("dashboard session cleanup failed", metadata: ["code": "\(error.code)"])
        }
        return deleted
    }
}
