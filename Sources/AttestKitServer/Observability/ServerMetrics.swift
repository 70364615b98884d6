import AttestKit
public import AttestKitFlows
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
    /// The flows' metrics (verifications, rate limits, receipt refreshes, risk), recorded into the same registry.
    public let flows: FlowMetrics
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
        self.flows = FlowMetrics(factory: factory)
    }

    /// One HTTP request answered on `route` (the route pattern, never the raw path) with `status`.
    func request(route: String, method: String, status: Int) {
        Counter(
            label: "attestkit_http_requests_total",
            dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory
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
