public import AttestKit
public import AttestKitApple
public import AttestKitStore
public import Foundation
public import Logging
public import ServiceLifecycle

/// Trades stored receipts with Apple for fresh ones (and their risk metric) once they are due, until graceful
/// shutdown.
///
/// Each round claims the due keys (receipt refresh time passed) of keys used within `activeWithin` whose receipts
/// have not expired, earliest first, and exchanges their receipts. The claim
/// (`KeyStore.claimReceiptRefresh(now:limit:lease:activeSince:)` of AttestKitStore) moves each key's refresh time to the
/// end of a lease in the same statement, so replicas sharing a store trade each due receipt once between them, and
/// the keys of a replica that stops mid-round (a crash) are due again, for any replica, once the lease passes; keys
/// a round claimed but did not reach because it was cancelled (shutdown) are handed back at once.
/// a new receipt is stored with its risk metric (a metric above the policy threshold is counted and logged);
/// 304 moves the key's next refresh to the receipt's Not Before. An answer about one receipt (Apple refuses it
/// with 400, 401, 403 or 404, or its answer does not verify) postpones only that key, longer each time
/// (`postponement(after:receiptCreatedAt:now:)`), and the round goes on with the other keys: one bad receipt
/// never stalls the others. When Apple rate limits, fails, cannot be reached or refuses this server's key, the
/// round stops and the service backs off exponentially (from one interval to an hour) so that an outage is not
/// hammered.
public struct ReceiptRefreshService: Service, CustomStringConvertible {
    let store: any AttestationStore
    let exchange: [AppAttestEnvironment: ReceiptExchangeClient]
    let interval: Duration
    let batch: Int
    let lease: Duration
    let activeWithin: TimeInterval
    let riskThreshold: Int?
    let metrics: FlowMetrics
    let logger: Logger
    let now: @Sendable () -> Date

    /// The outcome of one round.
    public struct Round: Sendable, Hashable {
        /// Receipts replaced.
        public var refreshed = 0
        /// Keys postponed (304, 404, invalid receipt, store refusal).
        public var postponed = 0
        /// Whether Apple failed and the round stopped early.
        public var backedOff = false
    }

    /// Creates the service.
    ///
    /// - Parameters:
    ///   - store: Where the keys and their receipts are.
    ///   - exchange: Apple's receipt exchange, per environment.
    ///   - interval: The time between rounds (when Apple answers).
    ///   - batch: The most keys one round takes.
    ///   - lease: How long a claimed key is kept from other claimers (longer than a round takes).
    ///   - activeWithin: How recently, in seconds, a key must have been used for its receipt to be traded; the
    ///     claim parks the others (`KeyStore.claimReceiptRefresh(now:limit:lease:activeSince:)`).
    ///   - riskThreshold: A risk metric above this is counted and logged (``RiskPolicy/threshold``).
    ///   - metrics: Where refreshes are counted.
    ///   - logger: Where rounds, refusals and back-offs are logged (never a receipt).
    ///   - now: The clock (injected for tests).
    public init(
        store: any AttestationStore, exchange: [AppAttestEnvironment: ReceiptExchangeClient], interval: Duration,
        batch: Int, lease: Duration = .seconds(300), activeWithin: TimeInterval = 30 * 86_400, riskThreshold: Int?,
        metrics: FlowMetrics, logger: Logger, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.store = store
        self.exchange = exchange
        self.interval = interval
        self.batch = batch
        self.lease = lease
        self.activeWithin = activeWithin
        self.riskThreshold = riskThreshold
        self.metrics = metrics
        self.logger = logger
        self.now = now
    }

    /// `ReceiptRefreshService(interval: 60.0 seconds, batch: 100)`. ServiceLifecycle names services by their
    /// description in its logs; the synthesized one would print every field, trust anchors included.
    public var description: String { "ReceiptRefreshService(interval: \(interval), batch: \(batch))" }

    /// Runs rounds until graceful shutdown or cancellation.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            var delay = interval
            while !Task.isCancelled {
                let outcome = await round()
                delay = outcome.backedOff ? min(delay * 2, .seconds(3_600)) : interval
                try? await Task.sleep(for: delay)
            }
        }
    }

    /// One round over the keys due now.
    public func round() async -> Round {
        var outcome = Round()
        let due: [KeyRecord]
        do {
            let time = now()
            due = try await store.claimReceiptRefresh(
                now: time, limit: batch, lease: lease, activeSince: time.addingTimeInterval(-activeWithin))
        } catch {
            logger.warning("receipt refresh: storage failed", metadata: ["code": "\(error.code)"])
            outcome.backedOff = true
            return outcome
        }
        var reached = 0
        for record in due {
            guard !Task.isCancelled else { break }
            reached += 1
            guard let receipt = record.receipt, let client = exchange[record.environment] else { continue }
            do {
                switch try await client.exchange(receipt, appID: record.appID, keyID: record.keyID, logger: logger) {
                case .refreshed(let fresh):
                    _ = try await store.storeReceipt(ReceiptUpdate(fresh), for: record.keyID, now: now())
                    metrics.receiptRefresh("refreshed")
                    outcome.refreshed += 1
                    if let metric = fresh.riskMetric { metrics.riskMetric(metric) }
                    if let threshold = riskThreshold, let metric = fresh.riskMetric, metric > threshold {
                        metrics.riskAboveThreshold(environment: record.environment)
                        logger.notice(
                            "risk metric above threshold; key marked for step-up",
                            metadata: ["keyId": "\(record.keyID)", "riskMetric": "\(metric)"])
                    }
                case .notModified(let retryAfter):
                    metrics.receiptRefresh("not_modified")
                    try await postpone(record.keyID, until: max(retryAfter ?? .distantPast, now() + 3_600))
                    outcome.postponed += 1
                }
            } catch let error as AppleServiceError {
                metrics.receiptRefresh(error.code.rawValue)
                guard Self.concernsOnlyThisReceipt(error.code) else {
                    logger.warning("receipt refresh: Apple failed; backing off", metadata: ["code": "\(error.code)"])
                    outcome.backedOff = true
                    break
                }
                let wait = Self.postponement(after: error.code, receiptCreatedAt: record.receiptCreatedAt, now: now())
                logger.notice(
                    "receipt refresh: Apple refused this receipt; the key waits",
                    metadata: [
                        "keyId": "\(record.keyID)", "code": "\(error.code)", "seconds": "\(Int(wait.rounded()))",
                    ])
                try? await postpone(record.keyID, until: now() + wait)
                outcome.postponed += 1
            } catch let error as StoreError {
                metrics.receiptRefresh(error.code.rawValue)
                if error.code == .storageUnavailable {
                    outcome.backedOff = true
                    break
                }
                // receipt_not_newer, key_revoked, key_not_found: nothing to store; look again later.
                try? await postpone(record.keyID, until: now() + 86_400)
                outcome.postponed += 1
            } catch {
                metrics.receiptRefresh("error")
                outcome.backedOff = true
                break
            }
        }
        // Keys not traded because Apple failed (from the one that failed) or the service is stopping go back at once:
        // their receipts did nothing wrong, and another replica need not wait for the lease.
        if outcome.backedOff, reached > 0 {
            await handBack(due[(reached - 1)...])
        } else if reached < due.count {
            await handBack(due[reached...])
        }
        return outcome
    }

    /// Makes claimed keys due again at once; best effort: a key not handed back is due when its lease passes. Runs
    /// in a task of its own: the round's task may be cancelled, and a store may refuse work for a cancelled task.
    private func handBack(_ keys: ArraySlice<KeyRecord>) async {
        let (store, time, keyIDs) = (store, now(), keys.map(\.keyID))
        await Task {
            for keyID in keyIDs { try? await store.postponeReceiptRefresh(of: keyID, until: time) }
        }.value
    }

    /// Whether Apple's answer is about this one receipt (the key waits, the round goes on) rather than about
    /// Apple or this server's key (the round stops and the service backs off): Apple's refusals of the receipt
    /// itself (400, 401 for another team's receipt, 403, 404) and answers that do not verify.
    static func concernsOnlyThisReceipt(_ code: AppleServiceError.Code) -> Bool {
        switch code {
        case .badPayload, .incorrectEnvironment, .invalidAuthorizationToken, .forbidden, .noData, .receiptInvalid,
            .unexpectedResponse, .responseTooLarge:
            true
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

    private func postpone(_ keyID: KeyID, until date: Date?) async throws {
        try await store.postponeReceiptRefresh(of: keyID, until: date)
    }
}
