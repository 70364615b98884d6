import AttestKitStore
import Foundation
import Logging

/// Spaces one replica's receipt exchanges under the fleet's ceiling: before each call to Apple it takes one
/// request from the budget every replica shares in the store (a ``RateBudget`` of `maxPerSecond` a second with a
/// burst of one, so that calls are at least `1/maxPerSecond` apart across the fleet and no window of a second holds
/// more than `maxPerSecond`).
///
/// Takes are made one at a time by the round (never by its concurrent exchanges), and the next is not tried before
/// the budget can have refilled, so a replica alone writes the budget's row once a call. Refused (another replica
/// took the request), it waits a little longer each time, with jitter, so that replicas do not retry in step.
struct ReceiptRefreshPacer {
    /// Whether the round may call Apple.
    enum Admission: Sendable, Equatable {
        /// One request taken: call Apple.
        case admitted
        /// The round's deadline came (or the task was cancelled) before a request could be taken.
        case late
        /// The store could not be asked: the round stops and backs off.
        case failed
    }

    let budget: RateBudget?
    let spacing: Duration
    let store: any RateBudgetStore
    let now: @Sendable () -> Date
    let logger: Logger
    private var nextAttempt = ContinuousClock.now

    /// A pacer for `maxPerSecond` calls a second across the fleet (0: no ceiling).
    init(store: any RateBudgetStore, maxPerSecond: Int, now: @escaping @Sendable () -> Date, logger: Logger) {
        let rate = min(max(0, maxPerSecond), 1_000_000)
        self.budget = rate > 0 ? try? RateBudget(name: ReceiptRefreshService.budgetName, perSecond: rate) : nil
        self.spacing = rate > 0 ? .seconds(1) / rate : .zero
        self.store = store
        self.now = now
        self.logger = logger
    }

    /// Waits until the fleet's ceiling admits one call to Apple, or `deadline` passes (also while the store answers
    /// the take), or the task is cancelled.
    mutating func admit(before deadline: ContinuousClock.Instant) async -> Admission {
        guard !Task.isCancelled, ContinuousClock.now < deadline else { return .late }
        guard let budget else { return .admitted }
        var refusals = 0
        while true {
            let attempt = max(nextAttempt, .now)
            guard attempt < deadline else { return .late }
            try? await Task.sleep(until: attempt, clock: .continuous)
            guard !Task.isCancelled else { return .late }
            let wait: Int?
            let taken = ContinuousClock.now
            do {
                wait = try await store.take(from: budget, now: now())
            } catch {
                logger.warning("receipt refresh: storage failed", metadata: ["code": "\(error.code)"])
                return .failed
            }
            guard wait != nil else {
                // The budget refills from the time the take names, not from its answer: the next request is there
                // one spacing later (and a millisecond, the store's resolution), however long the store took.
                nextAttempt = taken + spacing + .milliseconds(1)
                // A store slow to answer may have taken the round past its deadline: the request taken is spent, but
                // no exchange may start that could outlive the keys' lease.
                return ContinuousClock.now < deadline ? .admitted : .late
            }
            refusals += 1
            nextAttempt = .now + spacing * min(refusals, 8) + spacing * Double.random(in: 0..<1)
        }
    }
}
