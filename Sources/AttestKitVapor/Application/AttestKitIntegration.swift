public import AttestKitFlows
public import Foundation
public import Vapor

/// AttestKit in one Vapor application, configured once on `app.attestKit`: the `AttestKitApplication` (the
/// decisions composed once, the same as `attestkit serve` runs) and the few settings only the Vapor edge has: who
/// a request comes from behind trusted proxies, and the exposition `GET /metrics` prints.
///
/// The Vapor integration depends on no metrics backend: the application records through any swift-metrics factory
/// (its `FlowMetrics`), and `GET /metrics` prints what ``exposition`` returns, say the text of the swift-prometheus
/// registry that factory records into.
///
/// ```swift
/// let registry = PrometheusCollectorRegistry()   // swift-prometheus, your dependency
/// let application = try AttestKitApplication(
///     configuration: .init(appIDs: [appID], trustAnchors: try .apple(), backendTokens: [backendToken]),
///     store: SQLiteAttestationStore(path: "attestkit.sqlite"),
///     metrics: FlowMetrics(factory: PrometheusMetricsFactory(registry: registry)), logger: app.logger)
/// app.attestKit = try AttestKitIntegration(application, exposition: { registry.emitToBuffer() })
/// app.lifecycle.use(AttestKitLifecycle())
/// try app.register(collection: AttestKitRoutes())
/// ```
public struct AttestKitIntegration: Sendable {
    /// The decisions, composed once: every route and ``AttestKitMiddleware`` call its use cases.
    public let application: AttestKitApplication
    /// Who a request comes from, for the per-address budgets: the TCP peer (an IPv6 peer by its prefix,
    /// `rate-limit.ipv6-prefix-length`), or behind a trusted proxy the address it forwarded in the one header it owns.
    public let clientAddress: ClientAddress
    /// What `GET /metrics` prints (Prometheus' text format, `text/plain; version=0.0.4`), or `nil` (the route answers
    /// 503 `metrics_not_configured` to a caller with the monitoring credential): the exposition of the registry the
    /// application's `AttestKitApplication.metrics` record into.
    public let exposition: (@Sendable () -> [UInt8])?
    /// The operator dashboard: its browser sessions, history and login budget (the flows', as the service's).
    let dashboard: Dashboard

    /// AttestKit over `application`. Creates, at zero, the series of the application's metrics that the alert rules
    /// of `deploy/prometheus/` read (`FlowMetrics.initialiseSeries()`), so that an alert comparing a count with zero
    /// has a series to read from the first scrape, as with `attestkit serve`.
    ///
    /// - Parameters:
    ///   - application: The decisions, composed from their configuration, a store, Apple's clients, metrics, a
    ///     logger and a clock.
    ///   - trustedProxies: The proxies whose forwarding header is believed (the service's `http.trusted-proxies`);
    ///     none by default: only the TCP peer counts.
    ///   - clientAddressHeader: The header the trusted proxies write (`http.client-address-header`).
    ///   - trustsUnixSocketPeers: Whether a peer on a Unix domain socket (`serve --unix-socket` behind a proxy on the
    ///     same host) is a trusted proxy, whose forwarding header names the client. Without it every request over
    ///     the socket shares one budget (`unknown`): a client spending the wrong-credential budget refuses every
    ///     backend's right token.
    ///   - exposition: What `GET /metrics` prints and the operator dashboard (`GET /dashboard`) reads: the Prometheus
    ///     text of the application's metrics; without one, both answer 503 `metrics_not_configured`.
    ///   - dashboardSessionLifetime: How long a dashboard session lives, in seconds (the service's
    ///     `dashboard.session-lifetime`, 60 to 86,400; one hour by default, and for a value that is not a number).
    /// - Throws: `ConfigurationError` for `http.trusted-proxies` when a trusted proxy is a network holding every
    ///   address (`0.0.0.0/0`, `::/0`): any client could name its own address.
    public init(
        _ application: AttestKitApplication, trustedProxies: [IPNetwork] = [],
        clientAddressHeader: ClientAddressHeader = .xForwardedFor, trustsUnixSocketPeers: Bool = false,
        exposition: (@Sendable () -> [UInt8])? = nil, dashboardSessionLifetime: TimeInterval = 3_600
    ) throws(ConfigurationError) {
        try ClientAddress.checkTrustedProxies(trustedProxies)
        self.application = application
        self.clientAddress = ClientAddress(
            trustedProxies: trustedProxies, header: clientAddressHeader,
            ipv6PrefixLength: application.configuration.rateLimits.ipv6PrefixLength,
            trustsUnixSocketPeers: trustsUnixSocketPeers)
        self.exposition = exposition
        // The series the alert rules read, at zero from the first scrape, as `attestkit serve` has them.
        application.metrics.initialiseSeries()
        self.dashboard = Dashboard(
            application: application,
            sessionLifetime: dashboardSessionLifetime.isNaN ? 3_600 : min(max(dashboardSessionLifetime, 60), 86_400))
    }

    /// The rate-limit key of the client that sent `request` (`ClientAddress`): `192.0.2.1`,
    /// `2001:db8:0:1:0:0:0:0/64` (by `rate-limit.ipv6-prefix-length`) or `unknown`. A request over a Unix domain
    /// socket is named by its proxy's forwarding header only with `trustsUnixSocketPeers`.
    public func client(of request: Request) -> String {
        let headers = request.headers
        if case .unixDomainSocket = request.remoteAddress {
            return clientAddress.rateLimitKey(unixSocketPeerWithHeaders: { headers[$0] })
        }
        return clientAddress.rateLimitKey(peer: request.remoteAddress?.ipAddress) { headers[$0] }
    }
}
