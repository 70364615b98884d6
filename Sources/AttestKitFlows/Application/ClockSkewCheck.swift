public import AttestKitStore
public import Foundation
public import Logging
import Synchronization

/// This replica's clock against its store's: the check that keeps a replica whose clock has drifted out of a fleet.
///
/// Replicas sharing a store compare the times the others wrote with their own clocks: a challenge's or a session's
/// expiry, a used token's record, a job's lease, a shared budget's refill, a key's next receipt refresh. A replica
/// whose clock is behind honours what has expired; one ahead refuses what is still valid, takes the cleanup lease and
/// deletes records early, freezes the shared budgets for the others and parks receipt refreshes. Comparing each
/// replica with one clock, the database's (`AttestationStore.databaseTime()`, PostgreSQL's `clock_timestamp()`),
/// bounds how far apart any two can be without asking them of each other.
///
/// A measurement is one round trip, the one `/ready` makes anyway. The difference reported is the smallest the round
/// trip allows: 0 when the database's time falls between this replica's readings before and after the read, so a
/// slow database never looks like a skewed clock. Over ``maximum``, ``AttestKitApplication/ready()`` answers 503
/// `clock_skew` (a load balancer takes the replica out of rotation until its clock is set right) and the background
/// jobs skip their rounds (``allowsBackgroundWork()``). A store whose clock is this process's (memory, SQLite) is
/// never measured.
///
/// One per ``AttestKitApplication`` (a reference: every copy of the application shares it); the state it keeps is
/// only whether the last measurement was over the maximum, so that a change is logged once.
public final class ClockSkewCheck: Sendable {
    /// The largest difference tolerated, in seconds (`storage.max-clock-skew`); `nil`: measured and reported, never
    /// refused.
    public let maximum: TimeInterval?
    private let store: any AttestationStore
    private let metrics: FlowMetrics
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let skewed = Atomic<Bool>(false)

    /// Creates the check.
    /// - Parameters:
    ///   - maximum: The largest difference tolerated, in seconds; `nil` to measure only.
    ///   - store: The store whose clock is the fleet's.
    ///   - metrics: Where the difference is reported (`attestkit_clock_skew_seconds`).
    ///   - logger: Where a change of state is logged (over the maximum, back within it).
    ///   - now: This replica's clock (the one decisions are taken by).
    public init(
        maximum: TimeInterval?, store: any AttestationStore, metrics: FlowMetrics, logger: Logger,
        now: @escaping @Sendable () -> Date
    ) {
        self.maximum = maximum
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// Reads the database's clock once and reports the difference (`attestkit_clock_skew_seconds`).
    /// - Returns: This replica's clock minus the database's, in seconds (positive: this replica is ahead), the
    ///   smallest the round trip allows; `nil` for a store whose clock is this process's, which was pinged instead.
    /// - Throws: The store's error when it does not answer.
    public func measure() async throws(StoreError) -> TimeInterval? {
        let before = now()
        guard let database = try await store.databaseTime() else { return nil }
        let skew = Self.skew(database: database, before: before, after: now())
        metrics.clockSkew(seconds: skew)
        note(skew)
        return skew
    }

    /// Whether `skew` (from ``measure()``) is over ``maximum``; never without a maximum or a measurement.
    public func exceeds(_ skew: TimeInterval?) -> Bool {
        guard let skew, let maximum else { return false }
        return !(abs(skew) <= maximum)
    }

    /// The refusal `/ready` answers for `skew`: 503 `clock_skew`, naming the difference and the maximum.
    func refusal(_ skew: TimeInterval) -> FlowError {
        let seconds = Self.wholeSeconds(skew)
        let limit = Self.wholeSeconds(maximum ?? 0)
        return FlowError(
            .clockSkew, .unavailable(retryAfter: nil),
            "this replica's clock is \(seconds) s \(skew > 0 ? "ahead of" : "behind") the database's "
                + "(at most \(limit) s: storage.max-clock-skew)")
    }

    /// `seconds` as a whole number for a message: its magnitude rounded up, at most 10¹²; 0 for one that is not a
    /// number (a maximum or a clock given so in code must not trap).
    static func wholeSeconds(_ seconds: TimeInterval) -> Int {
        guard !seconds.isNaN else { return 0 }
        return Int(min(abs(seconds).rounded(.up), 1e12))
    }

    /// Whether a background job may run a round now: the store's clock was read and this replica's is within
    /// ``maximum`` of it. A store that does not answer skips the round too (logged: it would fail anyway); a store
    /// without a clock of its own, or no maximum, never stops one.
    public func allowsBackgroundWork() async -> Bool {
        do {
            return !exceeds(try await measure())
        } catch {
            logger.warning("background round skipped: storage failed", metadata: ["code": "\(error.code)"])
            return false
        }
    }

    /// Logs a change of state: over the maximum (a warning), back within it.
    private func note(_ skew: TimeInterval) {
        let over = exceeds(skew)
        guard skewed.exchange(over, ordering: .acquiringAndReleasing) != over else { return }
        let metadata: Logger.Metadata = [
            "skew_seconds": "\(skew.rounded())", "maximum_seconds": "\((maximum ?? 0).rounded())",
        ]
        if over {
            logger.warning(
                "clock skew over storage.max-clock-skew: /ready answers 503 clock_skew and background jobs pause",
                metadata: metadata)
        } else {
            logger.info("clock skew back within storage.max-clock-skew", metadata: metadata)
        }
    }

    /// This replica's clock minus the database's, in seconds, given the database's time and this replica's times
    /// before and after reading it: 0 when the database's falls between them (the round trip hides any smaller
    /// difference), otherwise the distance to the nearer reading.
    static func skew(database: Date, before: Date, after: Date) -> TimeInterval {
        let earliest = min(before, after)
        let latest = max(before, after)
        if database < earliest { return earliest.timeIntervalSince(database) }
        if database > latest { return latest.timeIntervalSince(database) }
        return 0
    }
}

extension FlowError.Code {
    /// This replica's clock differs from its store's by more than `storage.max-clock-skew` (`clock_skew`, 503 from
    /// `/ready`): set the clock right (NTP); the replica becomes ready again by itself.
    public static let clockSkew = FlowError.Code("clock_skew")
}
