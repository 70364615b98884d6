@testable import AttestKitFlows
import AttestKitStore
import Foundation
import Testing

/// The built-in page's counts, from an exposition: what a guarded route let through in report mode is not counted
/// as refused.
struct DashboardPageTests {
    @Test("replays and top rejection codes count a guarded route's rejections only when enforced, as Grafana does")
    func reportModeIsNotRefused() {
        let exposition = """
            attestkit_verifications_total{kind="assertion",outcome="rejected",code="counter_not_increasing"} 2
            attestkit_guard_requests_total{group="pay",mode="enforce",trust="none",outcome="rejected",code="counter_not_increasing"} 3
            attestkit_guard_requests_total{group="pay",mode="report",trust="none",outcome="rejected",code="counter_not_increasing"} 40
            attestkit_guard_requests_total{group="pay",mode="report",trust="none",outcome="rejected",code="device_token_unchecked"} 50
            attestkit_guard_requests_total{group="pay",mode="enforce",trust="app_attest",outcome="accepted",code=""} 9
            """
        let page = DashboardPage(samples: MetricSample.parse(exposition), previous: nil, keyCounts: nil, now: Date()).html
        #expect(page.contains("<td>replays refused</td><td class=\"n\">5</td>"), "\(page)")
        #expect(page.contains("<td>counter_not_increasing</td><td class=\"n\">5</td>"))
        #expect(!page.contains("device_token_unchecked</td>"))
    }

    @Test("the keys table says unavailable when the store gave no counts, and zeros when it counted none")
    func keyCountsUnavailable() throws {
        func keysSection(_ counts: KeyCounts?) throws -> String {
            let page = DashboardPage(samples: [], previous: nil, keyCounts: counts, now: Date()).html
            let start = try #require(page.range(of: "<section id=\"keys\">"))
            let end = try #require(page.range(of: "</section>", range: start.upperBound..<page.endIndex))
            return String(page[start.lowerBound..<end.upperBound])
        }
        let unknown = try keysSection(nil)
        #expect(unknown.contains(">unavailable</td>") && !unknown.contains("none yet"), "\(unknown)")
        let none = try keysSection(KeyCounts(counts: [:]))
        #expect(none.contains("<td class=\"n\">0</td>") && !none.contains("unavailable"), "\(none)")
    }

    @Test("the receipt refresh backlog: the keys due and how long the oldest waited, once a round measured them")
    func refreshBacklog() {
        let before = DashboardPage(samples: [], previous: nil, keyCounts: nil, now: Date()).html
        #expect(before.contains(#"<section id="backlog">"#) && before.contains("none yet"))
        let exposition = """
            attestkit_receipt_refresh_backlog 42
            attestkit_receipt_refresh_oldest_due_seconds 5400
            """
        let page = DashboardPage(samples: MetricSample.parse(exposition), previous: nil, keyCounts: nil, now: Date()).html
        #expect(page.contains(#"<td>keys due</td><td class="n">42</td>"#), "\(page)")
        #expect(page.contains(#"<td>oldest due waited (minutes)</td><td class="n">90</td>"#))
    }
}
