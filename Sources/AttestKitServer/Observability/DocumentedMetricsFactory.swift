import CoreMetrics
import Prometheus
import Synchronization

/// A swift-metrics factory over a Prometheus registry that gives every metric its `# HELP` text
/// (``MetricCatalogue``); otherwise as swift-prometheus's own factory, with the service's buckets.
///
/// The service records its metrics through swift-metrics' value types (`Counter(label:dimensions:factory:)`), which
/// ask the factory for a handler each time. The registry would find the same series again, but only after
/// checking the name, the help text and the labels; the factory keeps each counter and timer it made, by label
/// and dimensions, and hands it back. The label sets are closed (``MetricCatalogue``), so the handlers kept are
/// as many as the series `/metrics` prints.
struct DocumentedMetricsFactory: MetricsFactory {
    let registry: PrometheusCollectorRegistry
    let durationBuckets: [Duration]
    let valueBuckets: [Double]
    private let handlers = Handlers()

    /// Creates a factory over `registry`, with the buckets of its duration and value histograms.
    init(registry: PrometheusCollectorRegistry, durationBuckets: [Duration], valueBuckets: [Double]) {
        self.registry = registry
        self.durationBuckets = durationBuckets
        self.valueBuckets = valueBuckets
    }

    /// The counters and timers made so far, by label and dimensions.
    private final class Handlers: Sendable {
        struct Series: Hashable {
            let label: String
            let dimensions: [String]

            init(_ label: String, _ dimensions: [(String, String)]) {
                self.label = label
                self.dimensions = dimensions.flatMap { [$0.0, $0.1] }
            }
        }

        let counters = Mutex<[Series: Prometheus.Counter]>([:])
        let timers = Mutex<[Series: DurationHistogram]>([:])
    }

    /// The full name `label` with its help text.
    private static func descriptor(_ label: String) -> MetricNameDescriptor {
        MetricNameDescriptor(metricName: label, unitName: "", helpText: MetricCatalogue.help(label))
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        let series = Handlers.Series(label, dimensions)
        if let counter = handlers.counters.withLock({ $0[series] }) { return counter }
        let counter = registry.makeCounter(descriptor: Self.descriptor(label), labels: dimensions)
        handlers.counters.withLock { $0[series] = counter }
        return counter
    }

    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        registry.makeCounter(descriptor: Self.descriptor(label), labels: dimensions)
    }

    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        guard aggregate else {
            return registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions)
        }
        return registry.makeValueHistogram(
            descriptor: Self.descriptor(label), labels: dimensions, buckets: valueBuckets)
    }

    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        registry.makeGauge(descriptor: Self.descriptor(label), labels: dimensions)
    }

    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        let series = Handlers.Series(label, dimensions)
        if let timer = handlers.timers.withLock({ $0[series] }) { return timer }
        let timer = registry.makeDurationHistogram(
            descriptor: Self.descriptor(label), labels: dimensions, buckets: durationBuckets)
        handlers.timers.withLock { $0[series] = timer }
        return timer
    }

    func destroyCounter(_ handler: any CounterHandler) {
        guard let counter = handler as? Prometheus.Counter else { return }
        handlers.counters.withLock { counters in counters = counters.filter { $0.value !== counter } }
        registry.unregisterCounter(counter)
    }

    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) {
        guard let counter = handler as? Prometheus.Counter else { return }
        handlers.counters.withLock { counters in counters = counters.filter { $0.value !== counter } }
        registry.unregisterCounter(counter)
    }

    func destroyRecorder(_ handler: any RecorderHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
        if let histogram = handler as? ValueHistogram { registry.unregisterValueHistogram(histogram) }
    }

    func destroyMeter(_ handler: any MeterHandler) {
        if let gauge = handler as? Prometheus.Gauge { registry.unregisterGauge(gauge) }
    }

    func destroyTimer(_ handler: any TimerHandler) {
        guard let histogram = handler as? DurationHistogram else { return }
        handlers.timers.withLock { timers in timers = timers.filter { $0.value !== histogram } }
        registry.unregisterDurationHistogram(histogram)
    }
}
