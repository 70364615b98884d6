import Foundation
import Testing

@testable import AttestKitServer

/// What a fresh `ServerMetrics` exposes before any event: the counter series the alert rules read, at zero; and the
/// latency histograms' buckets, which reach past the store's and Apple's timeouts.
@Suite struct ServerMetricsSeriesTests {
    /// The counter series the alert rules' tests (`deploy/prometheus/attestkit-rules.test.yml`) feed, normalised
    /// (``series(_:)``), but `attestkit_guard_requests_total`, which appears with the first guarded request.
    static func rulesCounterSeries() throws -> Set<String> {
        let file = ServerSettingsTests.root.appendingPathComponent("deploy/prometheus/attestkit-rules.test.yml")
        let text = try String(contentsOf: file, encoding: .utf8)
        var series: Set<String> = []
        for match in text.matches(of: try Regex(#"series: '([^']+)'"#)) {
            guard let name = match.output[1].substring.map(String.init) else { continue }
            let normalised = Self.series(name)
            if normalised.hasSuffix("_total") || normalised.contains("_total{"),
                !normalised.hasPrefix("attestkit_guard_requests_total")
            {
                series.insert(normalised)
            }
        }
        return series
    }

    /// `name{a="1",b="2"}` with its labels sorted, so that the rules' tests and the exposition compare whatever
    /// their order.
    static func series(_ text: String) -> String {
        guard let brace = text.firstIndex(of: "{") else { return text }
        let labels = text[brace...].matches(of: #/([a-z_]+)="([^"]*)"/#).map { "\($0.output.1)=\"\($0.output.2)\"" }
        return text[..<brace] + "{" + labels.sorted().joined(separator: ",") + "}"
    }

    /// The series of an exposition whose value is 0, normalised.
    static func zeroSeries(_ exposition: String) -> Set<String> {
        var series: Set<String> = []
        for line in exposition.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), line[line.index(after: space)...] == "0" else { continue }
            series.insert(Self.series(String(line[..<space])))
        }
        return series
    }

    @Test("a fresh ServerMetrics exposes at zero every counter series the alert rules' tests feed")
    func rulesSeriesAtZero() throws {
        let expected = try Self.rulesCounterSeries()
        #expect(expected.count > 10, "\(expected)")
        let exposed = Self.zeroSeries(String(decoding: ServerMetrics().exposition(), as: UTF8.self))
        let missing = expected.subtracting(exposed)
        #expect(missing.isEmpty, "not at zero from the start: \(missing.sorted())")
        for limit in ["dashboard_logins_per_ip", "devicecheck_validations_per_client"] {
            #expect(exposed.contains(#"attestkit_rate_limited_total{limit="\#(limit)"}"#))
        }
    }

    @Test("a 10 s request is counted in a finite bucket: the duration buckets reach 30 s")
    func durationBucketsReachTheTimeouts() throws {
        let metrics = ServerMetrics()
        metrics.request(route: "/v1/x", method: "POST", status: 503, duration: .seconds(10))
        let text = String(decoding: metrics.exposition(), as: UTF8.self)
        var finite: [(le: Double, count: String)] = []
        let pattern = #/attestkit_http_request_duration_seconds_bucket\{[^}]*le="([^"]+)"\} (\d+)/#
        for match in text.matches(of: pattern) {
            if let le = Double(match.output.1), le.isFinite { finite.append((le, String(match.output.2))) }
        }
        let highest = try #require(finite.map(\.le).max())
        #expect(highest >= 30)
        let first = try #require(finite.filter { $0.le >= 10 }.min { $0.le < $1.le })
        #expect(first.le < 15 && first.count == "1", "\(finite)")
        #expect(finite.filter { $0.le < 10 }.allSatisfy { $0.count == "0" }, "\(finite)")
    }
}
