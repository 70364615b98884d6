import Foundation
public import ServiceLifecycle

extension AttestKitApplication {
    /// The long-lived parts to run beside the edge (swift-service-lifecycle `Service`s): ``challengeCleanup`` and,
    /// with Apple's receipt exchange, ``receiptRefresh``; none on a replica that does not run the background jobs
    /// (``Configuration/runsBackgroundJobs``). The store is not among them: whoever opened it runs it.
    public var backgroundServices: [any Service] {
        guard configuration.runsBackgroundJobs else { return [] }
        var services: [any Service] = [challengeCleanup]
        if let receiptRefresh { services.append(receiptRefresh) }
        return services
    }

    /// Deletes expired challenges and consumed-token records (`challenge-cleanup.interval`); pauses while this
    /// replica's clock is too far from the store's (``clockCheck``).
    public var challengeCleanup: ChallengeCleanupService {
        ChallengeCleanupService(
            store: store, interval: configuration.challengeCleanupInterval, holder: replica, logger: logger,
            clockCheck: clockCheck, now: now)
    }

    /// Trades receipts with Apple for fresh risk metrics (`receipt-refresh.*`), with this application's metrics;
    /// `nil` without Apple's receipt exchange. Only keys used within `receipt-refresh.active-within` are traded, and
    /// within `keys.expire-after` when that is shorter: an expired key never asserts again, so its receipt is worth no
    /// Apple call; nor is that of a key whose App ID or environment `apps` and `environments` no longer accept.
    public var receiptRefresh: ReceiptRefreshService? {
        guard let apple, !apple.receiptExchange.isEmpty else { return nil }
        return ReceiptRefreshService(
            store: store, exchange: apple.receiptExchange, interval: configuration.receiptRefreshInterval,
            batch: configuration.receiptRefreshBatch, lease: configuration.receiptRefreshLease,
            activeWithin: min(configuration.receiptRefreshActiveWithin, configuration.keyExpiry ?? .infinity),
            concurrency: configuration.receiptRefreshConcurrency,
            maxPerSecond: configuration.receiptRefreshMaxPerSecond,
            riskThreshold: configuration.policy.riskMetricThreshold, acceptance: gate.acceptance,
            metrics: metrics, logger: logger, clockCheck: clockCheck, now: now)
    }
}

extension AttestKitApplication {
    /// `HOST/PID/RANDOM`: the host name (at most 64 characters), the process id and 8 random hex digits.
    static func replicaName() -> String {
        let host = String(
            ProcessInfo.processInfo.hostName.unicodeScalars.filter { (0x21...0x7E).contains($0.value) }
                .prefix(64).map(Character.init))
        let suffix = String(UInt32.random(in: .min ... .max), radix: 16)
        return "\(host.isEmpty ? "replica" : host)/\(ProcessInfo.processInfo.processIdentifier)/\(suffix)"
    }
}
