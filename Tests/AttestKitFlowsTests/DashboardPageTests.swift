@testable import AttestKitFlows
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
}
