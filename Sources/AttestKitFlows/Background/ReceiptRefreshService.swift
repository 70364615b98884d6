public import AttestKit
public import AttestKitApple
public import AttestKitStore
public import Foundation
public import Logging
public import ServiceLifecycle
import Synchronization

/// Trades stored receipts with Apple for fresh ones (and their risk metric) once they are due, until graceful
/// shutdown.
///
/// Each round claims the due keys (receipt refresh time passed) of keys used within `activeWithin` whose receipts
/// have not expired, earliest first, and exchanges their receipts, at most ``concurrency`` at once. A round whose
/// claim took a whole batch (claimed or parked) is followed by the next at once, so that keys due in bulk are worked
/// through as fast as Apple answers and the ceiling allows; otherwise the next round waits `interval`. The claim
/// (`KeyStore.claimReceiptRefresh(now:limit:lease:activeSince:)` of AttestKitStore) moves each key's refresh time
/// to the end of a lease in the same statement, so replicas sharing a store trade each due receipt once between
/// them, and the keys of a replica that stops mid-round (a crash) are due again, for any replica, once the lease
/// passes; keys a round claimed but did not reach (cancelled at shutdown, stopped by a failure, or still waiting
/// for the ceiling at half the lease) are handed back at once.
///
/// Every call to Apple first takes one request from a budget in the store that every replica shares
/// (``maxPerSecond``, a `RateBudget` of AttestKitStore with a burst of one): the fleet never asks Apple for more
/// than that many receipts in any second; refused, the round waits for its turn. Under a ceiling each call is one
/// request (no retries inside it, which the budget would not count); without one, the exchange client's retries
/// apply.
///
/// A new receipt is stored with its risk metric (a metric above the policy threshold is counted and logged);
/// 304 moves the key's next refresh to the receipt's Not Before, an hour from now at the soonest. An answer about
/// one receipt (Apple refuses it with 400 or 404, or with 401 when it is of another team's app, or its answer does
/// not verify) postpones only that key, longer each time (`postponement(after:receiptCreatedAt:now:)`), and the
/// round goes on with the other keys: one bad receipt never stalls the others. When Apple rate limits, fails, cannot
/// be reached or refuses this server's key, the round starts no more exchanges (those in flight finish) and the
/// service backs off exponentially (`nextDelay(after:backedOff:interval:)`: twice the interval, doubling, up to an
/// hour or the interval if that is longer) so that an outage is not hammered.
///
/// After each round the backlog (due keys left, the age of the oldest) is read from the store and set as gauges.
public struct ReceiptRefreshService: Service, CustomStringConvertible {
    let store: any AttestationStore
    let exchange: [AppAttestEnvironment: ReceiptExchangeClient]
    let interval: Duration
    let batch: Int
    let lease: Duration
    let activeWithin: TimeInterval
    /// Receipt exchanges in flight at once in this replica.
    public let concurrency: Int
    /// The fleet's ceiling on receipt exchanges a second, shared through the store; 0: none.
    public let maxPerSecond: Int
    let riskThreshold: Int?
    /// The apps and environments whose keys may still assert; another key's receipt is not traded.
    let acceptance: KeyAcceptance?
    let metrics: FlowMetrics
    let logger: Logger
    let now: @Sendable () -> Date
    let clockCheck: ClockSkewCheck?

    /// The shared budget's name.
    static let budgetName = "receipt-refresh/apple"

    /// The outcome of one round.
    public struct Round: Sendable, Hashable {
        /// Receipts replaced.
        public var refreshed = 0
        /// Keys postponed (304, 404, invalid receipt, store refusal).
        public var postponed = 0
        /// Whether Apple or the store failed and the round stopped early.
        public var backedOff = false
        /// Keys claimed and handed back untraded (a failure, shutdown, or the ceiling's wait outlasting half the
        /// lease).
        public var handedBack = 0
        /// Whether the claim took a whole batch of due keys (claimed or parked): more may be due now, and
        /// ``ReceiptRefreshService/run()`` claims again at once rather than after its interval.
        public var moreDue = false
        /// The longest wait Apple asked for (`Retry-After`) with a failure that stopped the round, if any:
        /// ``ReceiptRefreshService/run()`` waits at least that long (at most an hour) before the next round.
        public var retryAfter: Duration?
    }

    /// Creates the service.
    ///
    /// - Parameters:
    ///   - store: Where the keys and their receipts are.
    ///   - exchange: Apple's receipt exchange, per environment.
    ///   - interval: The time between rounds (when Apple answers and the last round's claim left no due key).
    ///   - batch: The most keys one round takes.
    ///   - lease: How long a claimed key is kept from other claimers (longer than a round takes).
    ///   - activeWithin: How recently, in seconds, a key must have been used for its receipt to be traded; the
    ///     claim parks the others (`KeyStore.claimReceiptRefresh(now:limit:lease:activeSince:)`).
    ///   - concurrency: Receipt exchanges in flight at once in this replica (at least 1).
    ///   - maxPerSecond: The ceiling on receipt exchanges a second across every replica sharing `store`; 0: none.
    ///   - riskThreshold: A risk metric above this is counted and logged (``RiskPolicy/threshold``).
    ///   - acceptance: The apps and environments whose keys may still assert (the gate's); a key of another (the
    ///     configuration changed since it registered) is refused at every assertion, so its receipt is not traded:
    ///     it waits a day, as a key without an exchange for its environment does. `nil`: every key's is.
    ///   - metrics: Where refreshes and the backlog are counted.
    ///   - logger: Where rounds, refusals and back-offs are logged (never a receipt).
    ///   - clockCheck: This replica's clock against the store's: a round is skipped while they differ by more than
    ///     its maximum (the claim compares the keys' times, written by every replica, with this one's clock);
    ///     `nil`: never checked.
    ///   - now: The clock (injected for tests).
    public init(
        store: any AttestationStore, exchange: [AppAttestEnvironment: ReceiptExchangeClient], interval: Duration,
        batch: Int, lease: Duration = .seconds(300), activeWithin: TimeInterval = 30 * 86_400, concurrency: Int = 8,
        maxPerSecond: Int = 0, riskThreshold: Int?, acceptance: KeyAcceptance? = nil, metrics: FlowMetrics,
        logger: Logger, clockCheck: ClockSkewCheck? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.clockCheck = clockCheck
        self.store = store
        self.exchange = exchange
        self.interval = interval
        self.batch = batch
        self.lease = lease
        self.activeWithin = activeWithin
        self.concurrency = max(1, concurrency)
        self.maxPerSecond = max(0, maxPerSecond)
        self.riskThreshold = riskThreshold
        self.acceptance = acceptance
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// `ReceiptRefreshService(interval: 60.0 seconds, batch: 100, concurrency: 8, maxPerSecond: 50)`.
    /// ServiceLifecycle names services by their description in its logs; the synthesized one would print every
    /// field, trust anchors included.
    public var description: String {
        "ReceiptRefreshService(interval: \(interval), batch: \(batch), concurrency: \(concurrency), "
            + "maxPerSecond: \(maxPerSecond))"
    }

    /// Runs rounds until graceful shutdown or cancellation.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var delay = interval
            while !Task.isCancelled {
                let outcome = await round()
                delay = Self.nextDelay(after: delay, backedOff: outcome.backedOff, interval: interval)
                // Apple's own wait, when it asked for one longer than the back-off (an hour at most).
                if let asked = outcome.retryAfter { delay = max(delay, min(asked, .seconds(3_600))) }
                // A whole batch taken: more keys are due now. The next round starts at once, paced by Apple's
                // answers, the concurrency and the fleet's ceiling rather than by one batch an interval.
                if outcome.moreDue && !outcome.backedOff { continue }
                try? await Task.sleep(for: delay)
            }
        }
    }

    /// The wait before the next round: `interval` after a round that did not back off; after one that did, twice
    /// the previous wait, at most an hour, but never less than `interval` (backing off never calls Apple sooner than
    /// a healthy round would).
    static func nextDelay(after previous: Duration, backedOff: Bool, interval: Duration) -> Duration {
        guard backedOff else { return interval }
        return max(interval, min(previous * 2, .seconds(3_600)))
    }

    /// Whether an exchange of the round failed for every key, seen at once by the round's loop.
    final class FailureFlag: Sendable {
        private let value = Atomic<Bool>(false)
        var isSet: Bool { value.load(ordering: .relaxed) }
        func set() { value.store(true, ordering: .relaxed) }
    }

    /// What trading one key came to.
    enum Traded: Sendable, Equatable {
        case refreshed
        case postponed
        /// An answer that may be about this receipt or about the way to Apple (``isDoubtful(_:)``): the key waits
        /// this many seconds, unless the round finds the answers doubtful in a row (``doubtfulStreak``) and backs off.
        case doubted(TimeInterval)
        /// Apple (as a whole), the store or something else failed: the round stops, the key goes back; Apple's
        /// `Retry-After`, when it sent one.
        case failed(retryAfter: Duration?)

        /// A failure without a wait asked for.
        static let failed = Traded.failed(retryAfter: nil)

        /// Whether the round stops at this.
        var isFailure: Bool {
            if case .failed = self { return true }
            return false
        }
    }

    /// How long a claimed key waits when the service has no receipt exchange for its environment (a library's
    /// service built for one environment only): a day.
    static let unexchangeableWait: TimeInterval = 86_400

    /// How many doubtful answers in a row, with no other answer between them, the round takes for a failure of the
    /// way to Apple rather than of their receipts: it backs off, and their keys go back untraded.
    static let doubtfulStreak = 3

    /// Whether Apple's refusal of one receipt is one that a proxy or load balancer in the way, an outage page or
    /// this server's own receipt trust would give every receipt alike: a status Apple does not document, an answer
    /// that is not a receipt or is too large, a receipt that does not verify.
    static func isDoubtful(_ code: AppleServiceError.Code) -> Bool {
        [.unexpectedResponse, .responseTooLarge, .receiptInvalid].contains(code)
    }

    /// One round over the keys due now; none while this replica's clock is too far from the store's
    /// (``ClockSkewCheck/allowsBackgroundWork()``).
    public func round() async -> Round {
        var outcome = Round()
        if let clockCheck, !(await clockCheck.allowsBackgroundWork()) { return outcome }
        let due: [KeyRecord]
        // Past half the lease, another replica may soon claim the keys again: the rest go back instead. Counted from
        // before the claim, as the lease is (the claim itself may wait for the store).
        let deadline = ContinuousClock.now + lease / 2
        // The round's own writes to its claimed keys (postponements, hand-backs) stop at three quarters of the
        // lease: one landing after the lease would move a key another replica has claimed since.
        let writesEnd = deadline + lease / 4
        do {
            let time = now()
            let claim = try await store.claimReceiptRefreshBatch(
                now: time, limit: batch, lease: lease, activeSince: time.addingTimeInterval(-activeWithin))
            due = claim.keys
            outcome.moreDue = claim.reachedLimit(batch)
        } catch {
            logger.warning("receipt refresh: storage failed", metadata: ["code": "\(error.code)"])
            outcome.backedOff = true
            return outcome
        }
        var untraded: [KeyRecord] = []
        // Keys whose answers were doubtful, with their waits; and how many such answers came in a row.
        var doubted: [(KeyRecord, TimeInterval)] = []
        var streak = 0
        var doubtedInARow = false
        var unexchangeable: [KeyRecord] = []
        var notAccepted: [KeyRecord] = []
        var next = 0
        // Set by the exchange that fails for every key, so that the round starts no other while it waits its turn.
        let failed = FailureFlag()
        await withTaskGroup(of: (KeyRecord, Traded).self) { group in
            var running = 0
            var pacer = ReceiptRefreshPacer(store: store, maxPerSecond: maxPerSecond, now: now, logger: logger)
            func settle(_ result: (KeyRecord, Traded)) {
                switch result.1 {
                case .refreshed:
                    outcome.refreshed += 1
                    streak = 0
                case .postponed:
                    outcome.postponed += 1
                    streak = 0
                case .doubted(let wait):
                    doubted.append((result.0, wait))
                    streak += 1
                    if streak >= Self.doubtfulStreak && !doubtedInARow {
                        doubtedInARow = true
                        outcome.backedOff = true
                        logger.warning(
                            "receipt refresh: doubtful answers in a row, the way to Apple fails; backing off",
                            metadata: ["answers": "\(streak)"])
                    }
                case .failed(let retryAfter):
                    outcome.backedOff = true
                    if let retryAfter { outcome.retryAfter = max(outcome.retryAfter ?? .zero, retryAfter) }
                    untraded.append(result.0)
                }
            }
            while next < due.count, !outcome.backedOff, !failed.isSet, !Task.isCancelled {
                if running >= concurrency {
                    if let result = await group.next() {
                        running -= 1
                        settle(result)
                    }
                    continue
                }
                let record = due[next]
                if let acceptance, !acceptance.accepts(record) {
                    // Refused at every assertion: its risk metric can matter to nothing.
                    notAccepted.append(record)
                    next += 1
                    continue
                }
                guard let receipt = record.receipt, let client = exchange[record.environment] else {
                    // Nothing to trade it with (no receipt, or no exchange client for its environment): it waits a
                    // day rather than be claimed again at every lease.
                    unexchangeable.append(record)
                    next += 1
                    continue
                }
                // Read again before its turn, not after: a read that waits for the store between the turn and the
                // call would bunch calls the budget spaced.
                if let settled = await recheck(record) {
                    next += 1
                    if settled.isFailure { failed.set() }
                    settle((record, settled))
                    continue
                }
                let admission = await pacer.admit(before: deadline)
                if admission == .failed { outcome.backedOff = true }
                guard admission == .admitted, !failed.isSet else { break }
                next += 1
                running += 1
                group.addTask {
                    let traded = await trade(record, receipt: receipt, client: client)
                    if traded.isFailure { failed.set() }
                    return (record, traded)
                }
            }
            while let result = await group.next() {
                running -= 1
                settle(result)
            }
        }
        // Keys not traded because Apple or the store failed (from the one that failed) or the service is stopping go
        // back at once: their receipts did nothing wrong, and another replica need not wait for the lease.
        untraded += due[next...]
        // Doubtful answers in a row were about the way to Apple: their keys go back with the others. Otherwise each
        // waits as a refused receipt does.
        if doubtedInARow { untraded += doubted.map(\.0) }
        if !unexchangeable.isEmpty {
            logger.warning(
                "receipt refresh: keys with no receipt exchange for their environment wait a day",
                metadata: ["keys": "\(unexchangeable.count)"])
        }
        if !notAccepted.isEmpty {
            logger.notice(
                "receipt refresh: keys of an app or environment no longer accepted are not traded; they wait a day",
                metadata: ["keys": "\(notAccepted.count)"])
        }
        let time = now()
        let postponements: [(KeyID, Date?)] =
            (doubtedInARow ? [] : doubted.map { ($0.0.keyID, time + $0.1) })
            + (unexchangeable + notAccepted).map { ($0.keyID, time + Self.unexchangeableWait) }
        let written = await release(postponements + untraded.map { ($0.keyID, nil) }, before: writesEnd, now: time)
        outcome.postponed += written.postponed
        outcome.handedBack = written.handedBack
        await measureBacklog()
        return outcome
    }

    /// Trades one key's receipt: what it came to.
    private func trade(_ record: KeyRecord, receipt: [UInt8], client: ReceiptExchangeClient) async -> Traded {
        do {
            // Under a ceiling every request to Apple took its turn from the budget: a retry inside the call would
            // send requests the budget never counted (three a turn while Apple fails, when the fleet should send
            // fewer). The round's own back-off takes the place of retries then.
            let retry: RetryPolicy? = maxPerSecond > 0 ? RetryPolicy.none : nil
            switch try await client.exchange(
                receipt, appID: record.appID, keyID: record.keyID, logger: logger, retry: retry)
            {
            case .refreshed(let fresh):
                // In a task of its own, as every write of the round: Apple has answered, and a round cancelled now
                // (shutdown) must still keep the receipt, which a store may refuse to write for a cancelled task.
                let (store, keyID, time) = (store, record.keyID, now())
                _ = try await Task { try await store.storeReceipt(ReceiptUpdate(fresh), for: keyID, now: time) }.value
                metrics.receiptRefresh("refreshed")
                if let metric = fresh.riskMetric { metrics.riskMetric(metric) }
                if let threshold = riskThreshold, let metric = fresh.riskMetric, metric > threshold {
                    metrics.riskAboveThreshold(environment: record.environment)
                    logger.notice(
                        "risk metric above threshold; key marked for step-up",
                        metadata: ["keyId": "\(record.keyID)", "riskMetric": "\(metric)"])
                }
                return .refreshed
            case .notModified(let retryAfter):
                // Counted once it is kept: a postponement the store refuses is counted by its code alone.
                try await postpone(record.keyID, until: max(retryAfter ?? .distantPast, now() + 3_600))
                metrics.receiptRefresh("not_modified")
                return .postponed
            }
        } catch let error as AppleServiceError where error.code == .cancelled {
            // The round was cancelled (the service is stopping): Apple did not fail, so nothing is counted or logged;
            // the round ends and the key goes back.
            return .failed
        } catch let error as AppleServiceError {
            metrics.receiptRefresh(error.code.rawValue)
            guard Self.concernsOnlyThisReceipt(error.code, appID: record.appID, tokenTeamID: client.teamID) else {
                logger.warning("receipt refresh: Apple failed; backing off", metadata: ["code": "\(error.code)"])
                return .failed(retryAfter: error.retryAfter)
            }
            let wait = Self.postponement(after: error.code, receiptCreatedAt: record.receiptCreatedAt, now: now())
            if Self.isDoubtful(error.code) {
                logger.notice(
                    "receipt refresh: Apple's answer to this receipt is doubtful",
                    metadata: ["keyId": "\(record.keyID)", "code": "\(error.code)"])
                return .doubted(wait)
            }
            logger.notice(
                "receipt refresh: Apple refused this receipt; the key waits",
                metadata: [
                    "keyId": "\(record.keyID)", "code": "\(error.code)", "seconds": "\(Int(wait.rounded()))",
                ])
            try? await postpone(record.keyID, until: now() + wait)
            return .postponed
        } catch let error as StoreError {
            return await storeRefused(error, of: record)
        } catch {
            metrics.receiptRefresh("error")
            return .failed
        }
    }

    /// Reads a claimed key again just before its turn: `nil` when it is still active, otherwise what that came to.
    /// The key may have been deleted (its device's data erased) or revoked since the batch was claimed, a round
    /// waiting up to half its lease for its turns: its receipt is not sent to Apple then. One deleted while it waits
    /// for its own turn still is (read after the turn, the store's latency would bunch the calls the budget spaced);
    /// the answer finds no key to store it in.
    private func recheck(_ record: KeyRecord) async -> Traded? {
        do throws(StoreError) {
            guard let current = try await store.keyWithoutReceipt(record.keyID) else {
                throw StoreError(.keyNotFound, "the key was deleted after it was claimed")
            }
            guard current.state == .active else {
                throw StoreError(.keyRevoked, "the key was revoked after it was claimed")
            }
            return nil
        } catch {
            return await storeRefused(error, of: record)
        }
    }

    /// What a store's refusal while trading a key comes to: an outage stops the round; anything else about the key
    /// (`receipt_not_newer`, `key_revoked`, `key_not_found`) leaves nothing to store, and the key is looked at again
    /// in a day.
    private func storeRefused(_ error: StoreError, of record: KeyRecord) async -> Traded {
        metrics.receiptRefresh(error.code.rawValue)
        if error.code == .storageUnavailable { return .failed }
        try? await postpone(record.keyID, until: now() + 86_400)
        return .postponed
    }

    /// Reads the backlog left after a round and sets its gauges; a store that cannot answer leaves them as they were.
    private func measureBacklog() async {
        let time = now()
        do {
            let backlog = try await store.receiptRefreshBacklog(
                now: time, countingUpTo: ReceiptRefreshBacklog.defaultCap)
            metrics.receiptRefreshBacklog(backlog, now: time)
        } catch {
            logger.debug("receipt refresh: backlog not measured", metadata: ["code": "\(error.code)"])
        }
    }

    /// Moves the next exchange of claimed keys, in order: to the date given (a postponement), or to `now` for `nil`
    /// (a hand-back: due again at once). Returns how many of each were written. Best effort, and bounded: it stops
    /// at the store's first failure (a store that failed one write fails the others, each after its own deadline,
    /// and would hold the round, and a shutdown, for minutes) and at `end` (past it the lease may have passed and
    /// another replica claimed the keys since); a key not moved is due when its lease passes. Runs in a task of its
    /// own: the round's task may be cancelled, and a store may refuse work for a cancelled task.
    private func release(
        _ writes: [(KeyID, Date?)], before end: ContinuousClock.Instant, now: Date
    ) async -> (postponed: Int, handedBack: Int) {
        guard !writes.isEmpty else { return (0, 0) }
        let store = store
        return await Task {
            var written = (postponed: 0, handedBack: 0)
            for (keyID, date) in writes where ContinuousClock.now < end {
                do throws(StoreError) {
                    try await store.postponeReceiptRefresh(of: keyID, until: date ?? now)
                    if date == nil { written.handedBack += 1 } else { written.postponed += 1 }
                } catch  where error.code == .storageUnavailable {
                    break
                } catch {
                    continue  // this key's own refusal (deleted meanwhile, say): the others still go back
                }
            }
            return written
        }.value
    }

    /// Whether Apple's answer is about this one receipt (the key waits, the round goes on) rather than about
    /// Apple or this server's key (the round stops and the service backs off): Apple's refusals of the receipt
    /// itself (400, 404, and 401 to a receipt of an app of another team than the provider token's) and answers that
    /// do not verify (``isDoubtful(_:)``: three of those in a row stop the round too). A 401 to a receipt of the
    /// token's own team, or a 403, refuses this server's key or team: every other receipt would get the same
    /// answer, so it backs off rather than postpone each key in turn.
    package static func concernsOnlyThisReceipt(
        _ code: AppleServiceError.Code, appID: AppID, tokenTeamID: String
    ) -> Bool {
        switch code {
        case .badPayload, .incorrectEnvironment, .noData, .receiptInvalid, .unexpectedResponse, .responseTooLarge:
            true
        case .invalidAuthorizationToken:
            appID.teamID != tokenTeamID
        default:
            false
        }
    }

    /// The first wait of a key after a refusal of its receipt: an hour, or two days for 404 (Apple holds no data
    /// now, and may again after the device's next attestation activity).
    static func firstPostponement(after code: AppleServiceError.Code) -> TimeInterval {
        code == .noData ? 2 * 86_400 : 3_600
    }

    /// The longest wait of a key whose receipt Apple keeps refusing.
    static let maximumPostponement: TimeInterval = 7 * 86_400

    /// How long a key waits after Apple refused its receipt: as long as the receipt has gone without a refresh
    /// (which grows with every refusal, so the waits about double), at least ``firstPostponement(after:)`` and at
    /// most ``maximumPostponement``. Never forever: a refused key is retried for as long as it stays active.
    package static func postponement(after code: AppleServiceError.Code, receiptCreatedAt: Date?, now: Date)
        -> TimeInterval
    {
        let age = receiptCreatedAt.map { now.timeIntervalSince($0) } ?? 0
        return min(maximumPostponement, max(firstPostponement(after: code), age))
    }

    /// Moves `keyID`'s next exchange, in a task of its own (see ``release(_:before:now:)``).
    private func postpone(_ keyID: KeyID, until date: Date?) async throws {
        let store = store
        try await Task { try await store.postponeReceiptRefresh(of: keyID, until: date) }.value
    }
}
