public import AttestKitStore
public import Foundation
public import Logging
public import ServiceLifecycle

/// Deletes expired challenges, the records of consumed tokens that expired and the expired dashboard sessions, at a
/// fixed interval until graceful shutdown.
///
/// Replicas sharing a store clean it up one at a time: a round runs only while this replica holds the `cleanup`
/// lease (`JobLeaseStore` of AttestKitStore), taken or renewed at each round for three intervals, so another replica
/// takes over within three intervals of the holder stopping.
///
/// A row is deleted ``clockMargin`` after it expired by this replica's clock, not at once: the lease goes to whichever
/// replica asks once it has passed by its own clock, so a replica whose clock runs ahead tends to hold it, and it
/// would otherwise delete the record of a used token that the others, on time, still accept (and the token could be
/// used again), or a challenge they still honour. A challenge or a session is read with its expiry checked, so
/// one kept longer changes no answer; a used token's record kept longer keeps its token refused longer, past the
/// token's own expiry (which refuses it anyway).
public struct ChallengeCleanupService: Service, CustomStringConvertible {
    let store: any AttestationStore
    let interval: Duration
    let holder: String
    let logger: Logger
    let now: @Sendable () -> Date
    let clockCheck: ClockSkewCheck?

    /// The name of the lease the cleanup runs under.
    public static let job = "cleanup"

    /// How long after its expiry, by this replica's clock, a row is deleted: ten minutes, the clock skew between
    /// replicas the cleanup tolerates.
    public static let clockMargin: TimeInterval = 600

    /// Creates the service.
    /// - Parameters:
    ///   - store: The store to clean up.
    ///   - interval: The time between rounds.
    ///   - holder: This replica's name in the store's leases (``AttestKitApplication/replica``).
    ///   - logger: Where failures are logged.
    ///   - clockCheck: This replica's clock against the store's: a round is skipped while they differ by more than
    ///     its maximum; `nil`: never checked.
    ///   - now: The clock (injected for tests).
    public init(
        store: any AttestationStore, interval: Duration, holder: String, logger: Logger,
        clockCheck: ClockSkewCheck? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.clockCheck = clockCheck
        self.store = store
        self.interval = interval
        self.holder = holder
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

    /// One round: delete what expired ``clockMargin`` ago or earlier, when this replica holds the lease and its clock
    /// is within the maximum of the store's (``ClockSkewCheck/allowsBackgroundWork()``); a storage failure is logged
    /// and retried next round.
    /// - Returns: How many challenges, token records and dashboard sessions were deleted (0 without the lease).
    @discardableResult
    public func round() async -> Int {
        if let clockCheck, !(await clockCheck.allowsBackgroundWork()) { return 0 }
        let time = now()
        var deleted = 0
        do {
            let lease = min(max(interval * 3, .seconds(1)), .seconds(86_400))
            guard try await store.acquireLease(on: Self.job, holder: holder, duration: lease, now: time) else {
                return 0
            }
        } catch {
            logger.warning("cleanup lease failed", metadata: ["code": "\(error.code)"])
            return 0
        }
        let cutoff = time - Self.clockMargin
        do {
            let challenges = try await store.deleteExpiredChallenges(now: cutoff)
            if challenges > 0 { logger.debug("expired challenges deleted", metadata: ["count": "\(challenges)"]) }
            deleted += challenges
        } catch {
            logger.warning("challenge cleanup failed", metadata: ["code": "\(error.code)"])
        }
        do {
            let tokens = try await store.deleteExpiredTokens(now: cutoff)
            if tokens > 0 { logger.debug("expired token records deleted", metadata: ["count": "\(tokens)"]) }
            deleted += tokens
        } catch {
            logger.warning("token record cleanup failed", metadata: ["code": "\(error.code)"])
        }
        do {
            let sessions = try await store.deleteExpiredDashboardSessions(now: cutoff)
            if sessions > 0 { logger.debug("expired dashboard sessions deleted", metadata: ["count": "\(sessions)"]) }
            deleted += sessions
        } catch {
            logger.warning("dashboard session cleanup failed", metadata: ["code": "\(error.code)"])
        }
        return deleted
    }
}
