import AttestKit
import AttestKitStore
import CoreMetrics
import Foundation
import Metrics
public import Prometheus

/// The service's metrics, recorded through swift-metrics into its own Prometheus registry (not the process-wide
/// `MetricsSystem`, so that several servers, as in tests, keep separate counts) and exposed at `/metrics`.
///
/// Labels are closed sets (routes, outcomes, error codes): nothing a client sends becomes a label.
public final class ServerMetrics: Sendable {
    /// The registry `/metrics` prints.
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    /// Creates metrics over a new registry.
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
            .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5),
        ]
        self.factory = factory
    }

    /// One HTTP request answered on `route` (the route pattern, never the raw path) with `status`.
    func request(route: String, method: String, status: Int) {
        Counter(
            label: "attestkit_http_requests_total",
            dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory
        ).increment()
    }

    /// One verification (`attestation` or `assertion`) and its outcome: `accepted`, or the error code.
    func verification(_ kind: String, code: String?, duration: Duration) {
        Counter(
            label: "attestkit_verifications_total",
            dimensions: [("kind", kind), ("outcome", code == nil ? "accepted" : "rejected"), ("code", code ?? "")],
            factory: factory
        ).increment()
        Metrics.Timer(label: "attestkit_verification_duration_seconds", dimensions: [("kind", kind)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// A request refused by the named rate limit.
    func rateLimited(_ limit: String) {
        Counter(label: "attestkit_rate_limited_total", dimensions: [("limit", limit)], factory: factory).increment()
    }

    /// One receipt exchange and its result (`refreshed`, `not_modified`, or an error code).
    func receiptRefresh(_ result: String) {
        Counter(label: "attestkit_receipt_refresh_total", dimensions: [("result", result)], factory: factory)
            .increment()
    }

    /// A receipt whose risk metric is above the step-up threshold.
    func riskAboveThreshold(environment: AppAttestEnvironment) {
        Counter(
            label: "attestkit_risk_metric_above_threshold_total", dimensions: [("environment", environment.rawValue)],
            factory: factory
        ).increment()
    }

    /// One DeviceCheck call and its outcome (`ok` or an error code).
    func deviceCheck(_ operation: String, outcome: String) {
        Counter(
            label: "attestkit_devicecheck_requests_total",
            dimensions: [("operation", operation), ("outcome", outcome)],
            factory: factory
        ).increment()
    }

    /// A connection closed by the server because the client stalled (`read_timeout`, `idle_timeout`).
    func connectionClosed(reason: String) {
        Counter(label: "attestkit_http_connections_closed_total", dimensions: [("reason", reason)], factory: factory)
            .increment()
    }

    /// A connection accepted and closed at once because the maximum was open.
    func connectionRefused() {
        Counter(label: "attestkit_http_connections_refused_total", factory: factory).increment()
    }

    /// The connections open now, across listeners.
    func openConnections(_ count: Int) {
        Gauge(label: "attestkit_http_connections_open", factory: factory).record(count)
    }

    /// Sets the keys gauge from the store's counts.
    func keys(_ counts: KeyCounts) {
        for environment in AppAttestEnvironment.allCases {
            for state in KeyState.allCases {
                Gauge(
                    label: "attestkit_keys",
                    dimensions: [("environment", environment.rawValue), ("state", state.rawValue)], factory: factory
                ).record(counts.count(environment: environment, state: state))
            }
        }
    }

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] { registry.emitToBuffer() }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
