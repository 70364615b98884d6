import AttestKit
import AttestKitApple
import AttestKitStore
import Foundation
import Logging
public import ServiceLifecycle

/// Trades stored receipts with Apple for fresh ones (and their risk metric) once they are due, until graceful
/// shutdown.
///
/// Each round takes the due keys (receipt refresh time passed), earliest first, and exchanges their receipts:
/// a new receipt is stored with its risk metric (a metric above the policy threshold is counted and logged);
/// 304 moves the key's next refresh to the receipt's Not Before; 404 (Apple no longer has data) stops refreshing
/// the key; a receipt that fails verification waits a day. When Apple rate limits, fails or cannot be reached,
/// the round stops and the service backs off exponentially (from one interval to an hour) so that an outage is
/// not hammered.
public struct ReceiptRefreshService: Service, CustomStringConvertible {
    let store: any AttestationStore
    let exchange: [AppAttestEnvironment: ReceiptExchangeClient]
    let interval: Duration
    let batch: Int
    let riskThreshold: Int?
    let metrics: ServerMetrics
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

    init(
        store: any AttestationStore, exchange: [AppAttestEnvironment: ReceiptExchangeClient], interval: Duration,
        batch: Int, riskThreshold: Int?, metrics: ServerMetrics, logger: Logger, now: @escaping @Sendable () -> Date
    ) {
        self.store = store
        self.exchange = exchange
        self.interval = interval
        self.batch = batch
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
            due = try await store.keysDueForReceiptRefresh(now: now(), limit: batch)
        } catch {
            logger.warning("receipt refresh: storage failed", metadata: ["code": "\(error.code)"])
            outcome.backedOff = true
            return outcome
        }
        for record in due {
            guard !Task.isCancelled else { break }
            guard let receipt = record.receipt, let client = exchange[record.environment] else { continue }
            do {
                switch try await client.exchange(receipt, appID: record.appID, keyID: record.keyID, logger: logger) {
                case .refreshed(let fresh):
                    _ = try await store.storeReceipt(ReceiptUpdate(fresh), for: record.keyID, now: now())
                    metrics.receiptRefresh("refreshed")
                    outcome.refreshed += 1
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
                if error.code == .noData {
                    try? await postpone(record.keyID, until: nil)
                    outcome.postponed += 1
                } else if error.code == .receiptInvalid || error.code == .unexpectedResponse {
                    logger.warning(
                        "receipt refresh: Apple's answer did not verify", metadata: ["keyId": "\(record.keyID)"])
                    try? await postpone(record.keyID, until: now() + 86_400)
                    outcome.postponed += 1
                } else {
                    logger.warning("receipt refresh: Apple failed; backing off", metadata: ["code": "\(error.code)"])
                    outcome.backedOff = true
                    break
                }
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
        return outcome
    }

    private func postpone(_ keyID: KeyID, until date: Date?) async throws {
        try await store.postponeReceiptRefresh(of: keyID, until: date)
    }
}
