import AttestKitFlows
import Foundation
import Prometheus
import Testing
import Vapor
import VaporTesting

/// A fresh Vapor integration exposes the series the alert rules read at zero, as `attestkit serve` does
/// (`FlowMetrics.initialiseSeries()`), so that `AttestKitReceiptRefreshFailing`'s "no success within the hour" has
/// a series to read before the first success.
@Suite("Vapor metrics series")
struct VaporMetricsSeriesTests {
    /// The repository's root.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The counter series the alert rules' tests feed (`deploy/prometheus/attestkit-rules.test.yml`), labels
    /// sorted, but `attestkit_guard_requests_total`, which appears with the first guarded request.
    static func rulesCounterSeries() throws -> Set<String> {
        let file = root.appendingPathComponent("deploy/prometheus/attestkit-rules.test.yml")
        let text = try String(contentsOf: file, encoding: .utf8)
        let names = text.matches(of: #/series: '([^']+)'/#).map { series(String($0.output.1)) }
        return Set(names.filter { $0.contains("_total") && !$0.hasPrefix("attestkit_guard_requests_total") })
    }

    /// `name{a="1",b="2"}` with its labels sorted.
    static func series(_ text: String) -> String {
        guard let brace = text.firstIndex(of: "{") else { return text }
        let labels = text[brace...].matches(of: #/([a-z_]+)="([^"]*)"/#).map { "\($0.output.1)=\"\($0.output.2)\"" }
        return text[..<brace] + "{" + labels.sorted().joined(separator: ",") + "}"
    }

    @Test("GET /metrics of a fresh integration shows the rules' counter series at zero, receipt refresh successes too")
    func rulesSeriesAtZero() async throws {
        let registry = PrometheusCollectorRegistry()
        try await VaporBench.withApplication(
            configure: VaporRoutesTests.credentials,
            metrics: FlowMetrics(factory: PrometheusMetricsFactory(registry: registry)), prometheus: registry
        ) { app in
            try await app.testing().test(
                .GET, "/metrics", headers: VaporRoutesTests.bearer(VaporBench.backendToken)
            ) { response in
                #expect(response.status == .ok)
                let text = response.body.string
                #expect(text.contains(#"attestkit_receipt_refresh_total{result="refreshed"} 0"#))
                #expect(text.contains(#"attestkit_receipt_refresh_total{result="not_modified"} 0"#))
                #expect(text.contains(#"attestkit_rate_limited_total{limit="dashboard_logins_per_ip"} 0"#))
                var exposed: Set<String> = []
                for line in text.split(separator: "\n") where !line.hasPrefix("#") && line.hasSuffix(" 0") {
                    exposed.insert(Self.series(String(line.dropLast(2))))
                }
                let expected = try Self.rulesCounterSeries()
                #expect(expected.count > 10, "\(expected)")
                let missing = expected.subtracting(exposed)
                #expect(missing.isEmpty, "not at zero from the start: \(missing.sorted())")
            }
        }
    }
}
