import Prometheus
import Testing

@testable import AttestKitServer

/// The factory keeps one handler per series (`DocumentedMetricsFactory`): the same label and dimensions count
/// together, any other dimension apart, and a destroyed handler is not handed out again.
@Suite struct MetricHandlesTests {
    @Test("the same series counts together, other dimensions apart")
    func seriesKeptApart() {
        let metrics = ServerMetrics()
        for _ in 0..<3 { metrics.request(route: "/v1/x", method: "POST", status: 200, duration: .milliseconds(1)) }
        metrics.request(route: "/v1/x", method: "POST", status: 401)
        metrics.request(route: "/v1/y", method: "POST", status: 200)
        metrics.request(route: "/v1/x", method: "GET", status: 200)
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        #expect(text.contains(#"attestkit_http_requests_total{route="/v1/x",method="POST",status="200"} 3"#))
        #expect(text.contains(#"attestkit_http_requests_total{route="/v1/x",method="POST",status="401"} 1"#))
        #expect(text.contains(#"attestkit_http_requests_total{route="/v1/y",method="POST",status="200"} 1"#))
        #expect(text.contains(#"attestkit_http_requests_total{route="/v1/x",method="GET",status="200"} 1"#))
        #expect(text.contains(#"attestkit_http_request_duration_seconds_count{route="/v1/x",method="POST"} 4"#))
    }

    @Test("a handler is handed out again until destroyed, then made anew")
    func destroyedHandlersAreNotReused() {
        let factory = DocumentedMetricsFactory(
            registry: PrometheusCollectorRegistry(), durationBuckets: [.seconds(1)], valueBuckets: [1])
        let label = "attestkit_storage_errors_total"
        let counter = factory.makeCounter(label: label, dimensions: [("a", "b")])
        #expect(factory.makeCounter(label: label, dimensions: [("a", "b")]) as AnyObject === counter as AnyObject)
        #expect(factory.makeCounter(label: label, dimensions: [("a", "c")]) as AnyObject !== counter as AnyObject)
        factory.destroyCounter(counter)
        #expect(factory.makeCounter(label: label, dimensions: [("a", "b")]) as AnyObject !== counter as AnyObject)

        let timer = factory.makeTimer(label: "attestkit_http_request_duration_seconds", dimensions: [])
        #expect(
            factory.makeTimer(label: "attestkit_http_request_duration_seconds", dimensions: []) as AnyObject
                === timer as AnyObject)
        factory.destroyTimer(timer)
        #expect(
            factory.makeTimer(label: "attestkit_http_request_duration_seconds", dimensions: []) as AnyObject
                !== timer as AnyObject)
    }
}
