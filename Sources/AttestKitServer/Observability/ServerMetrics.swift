import AttestKit
public import AttestKitFlows
import AttestKitStore
import CoreMetrics
import Foundation
import Metrics
public import Prometheus
import X509

/// The service's metrics, recorded through swift-metrics into its own Prometheus registry (not the process-wide
/// `MetricsSystem`, so that several servers, as in tests, keep separate counts) and exposed at `/metrics`.
///
/// Labels are closed sets (routes, outcomes, error codes): nothing a client sends becomes a label.
public final class ServerMetrics: Sendable {
    /// The registry `/metrics` prints.
    public let registry: PrometheusCollectorRegistry
    /// The flows' metrics (verifications, rate limits, receipt refreshes, risk), recorded into the same registry.
    public let flows: FlowMetrics
    private let factory: DocumentedMetricsFactory

    /// Creates metrics over a new registry, with every series an alert rule reads present from the start (at zero:
    /// `FlowMetrics.initialiseSeries()`, which the Vapor integration calls too).
    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        // The duration buckets reach past the longest calls: a store call ends by `operation_timeout` (10 s by
        // default), one to Apple by `apple.timeout` (15 s), so that a stall reads as long as it is.
        let factory = DocumentedMetricsFactory(
            registry: registry,
            durationBuckets: [
                .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
                .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
                .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5), .seconds(5), .seconds(10),
                .seconds(15), .seconds(30),
            ],
            valueBuckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 5_000])
        self.factory = factory
        self.flows = FlowMetrics(factory: factory)
        flows.initialiseSeries()
        // Set again by every scrape (`AttestKitApplication.refreshGauges()`) and readiness probe.
        Gauge(label: "attestkit_storage_up", factory: factory).record(1)
    }

    /// One HTTP request answered on `route` (the route pattern, never the raw path) with `status`, in `duration`;
    /// the method is counted by ``methodLabel(_:)``, so a method the client makes up is `other`.
    func request(route: String, method: String, status: Int, duration: Duration = .zero) {
        let method = Self.methodLabel(method)
        Counter(
            label: "attestkit_http_requests_total",
            dimensions: [("route", route), ("method", method), ("status", String(status))], factory: factory
        ).increment()
        Metrics.Timer(
            label: "attestkit_http_request_duration_seconds", dimensions: [("route", route), ("method", method)],
            factory: factory
        ).recordNanoseconds(duration.nanoseconds)
    }

    /// The standard methods (RFC 9110 and `PATCH`), the only ones that become a label by name.
    static let methodLabels: Set<String> = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ]

    /// The label of a request method: a standard method by name, anything else (`PURGE`, `MKCALENDAR`, a made-up
    /// token) `other`, so that the client cannot add series.
    static func methodLabel(_ method: String) -> String {
        methodLabels.contains(method) ? method : "other"
    }

    /// When the trust anchors expire.
    func trustAnchors(_ anchors: TrustAnchors) {
        for (name, anchor) in [("attestation", anchors.attestation), ("receipt", anchors.receipt)] {
            Gauge(
                label: "attestkit_trust_anchor_expiry_timestamp_seconds", dimensions: [("anchor", name)],
                factory: factory
            )
            .record(anchor.certificate.notValidAfter.timeIntervalSince1970)
        }
    }

    /// A connection closed by the server because the client stalled (`read_timeout`, `idle_timeout`, `write_timeout`).
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

    /// The Prometheus text exposition.
    public func exposition() -> [UInt8] { registry.emitToBuffer() }
}
