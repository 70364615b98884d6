import AttestKit
package import AttestKitStore
package import Foundation

/// The operator dashboard's HTML: one page, no script, no external resource (fonts, styles, images), refreshed by
/// the browser every 30 seconds. Every number is read from the service's own metrics (``MetricSample``) and the
/// store's key counts, so the page and `/metrics` never disagree.
package struct DashboardPage {
    package let samples: [MetricSample]
    /// An earlier exposition and how many seconds ago it was taken, for rates.
    package let previous: (samples: [MetricSample], seconds: Double)?
    package let keyCounts: KeyCounts?
    package let now: Date

    /// A page of `samples`, rates against `previous`, the store's `keyCounts` (`nil`: unavailable), at `now`.
    package init(
        samples: [MetricSample], previous: (samples: [MetricSample], seconds: Double)?, keyCounts: KeyCounts?, now: Date
    ) {
        self.samples = samples
        self.previous = previous
        self.keyCounts = keyCounts
        self.now = now
    }

    /// The rate per minute of the summed series, or "–" when there is no earlier sample.
    private func perMinute(_ name: String, _ matching: [String: String]) -> String {
        let current = samples.total(name, where: matching)
        guard let previous else { return "–" }
        let rate = max(0, current - previous.samples.total(name, where: matching)) / previous.seconds * 60
        return Self.number(rate, fraction: rate < 10)
    }

    static func number(_ value: Double, fraction: Bool = false) -> String {
        guard value.isFinite else { return "–" }
        if fraction { return String(format: "%.1f", value) }
        return String(Int(value.rounded()))
    }

    static func escape(_ text: String) -> String {
        var escaped = ""
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// A titled table; cells are escaped. Without rows it says `empty` (`none yet`, or `unavailable` where the
    /// store could not answer).
    private static func table(
        _ title: String, _ id: String, _ header: [String], _ rows: [[String]], empty: String = "none yet"
    ) -> String {
        var html = "<section id=\"\(id)\"><h2>\(escape(title))</h2><table><thead><tr>"
        html += header.map { "<th>\(escape($0))</th>" }.joined()
        html += "</tr></thead><tbody>"
        if rows.isEmpty {
            html += "<tr><td colspan=\"\(header.count)\" class=\"none\">\(escape(empty))</td></tr>"
        }
        for row in rows {
            html +=
                "<tr>"
                + row.enumerated().map { index, cell in
                    index == 0 ? "<td>\(escape(cell))</td>" : "<td class=\"n\">\(escape(cell))</td>"
                }.joined() + "</tr>"
        }
        return html + "</tbody></table></section>"
    }

    /// Rows of `name` summed by `keys`, sorted by the first key, with the total and the rate per minute.
    private func rows(_ name: String, by keys: [String], where matching: [String: String] = [:]) -> [[String]] {
        samples.sum(name, by: keys, where: matching).sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .filter { $0.value > 0 }
            .map { labels, value in
                var filter = matching
                for (key, label) in zip(keys, labels) { filter[key] = label }
                return [
                    labels.map { $0.isEmpty ? "–" : $0 }.joined(separator: " · "), Self.number(value),
                    perMinute(name, filter),
                ]
            }
    }

    /// The page.
    package var html: String {
        var body = ""
        body += Self.table(
            "Verifications (API)", "verifications", ["kind · outcome", "total", "per minute"],
            rows("attestkit_verifications_total", by: ["kind", "outcome"]))
        body += Self.table(
            "Guarded routes (middleware)", "guarded", ["group · mode · outcome · trust", "total", "per minute"],
            rows("attestkit_guard_requests_total", by: ["group", "mode", "outcome", "trust"]))
        var codes: [String: Double] = [:]
        for (labels, value) in samples.sum(
            "attestkit_verifications_total", by: ["code"], where: ["outcome": "rejected"])
        {
            codes[labels[0], default: 0] += value
        }
        // A guarded route's rejection in report mode was let through: refused only when enforced.
        for (labels, value) in samples.sum(
            "attestkit_guard_requests_total", by: ["code"], where: ["outcome": "rejected", "mode": "enforce"])
        {
            codes[labels[0], default: 0] += value
        }
        let top = codes.filter { $0.value > 0 }.sorted {
            $0.value > $1.value || ($0.value == $1.value && $0.key < $1.key)
        }
        .prefix(10).map { [$0.key, Self.number($0.value)] }
        body += Self.table("Top rejection codes", "rejections", ["code", "total"], Array(top))
        let replayCodes = ["counter_not_increasing", "challenge_consumed"]
        let replays = replayCodes.map { code in
            samples.total("attestkit_verifications_total", where: ["code": code])
                + samples.total("attestkit_guard_requests_total", where: ["code": code, "mode": "enforce"])
        }.reduce(0, +)
        body += Self.table("Replays refused", "replays", ["", "total"], [["replays refused", Self.number(replays)]])
        var keyRows: [[String]] = []
        if let keyCounts {
            for environment in AppAttestEnvironment.allCases {
                for state in KeyState.allCases {
                    keyRows.append([
                        "\(environment.rawValue) · \(state.rawValue)",
                        String(keyCounts.count(environment: environment, state: state)),
                    ])
                }
            }
        }
        body += Self.table(
            "Keys by environment and state", "keys", ["environment · state", "keys"], keyRows,
            empty: keyCounts == nil ? "unavailable" : "none yet")
        body += Self.table(
            "Keys registered by validation category (since start)", "categories",
            ["environment · category", "total", "per minute"],
            rows("attestkit_keys_registered_total", by: ["environment", "validation_category"]))
        var riskRows: [[String]] = []
        var below = 0.0
        for sample in samples where sample.name == "attestkit_risk_metric_bucket" {
            guard let bound = sample.labels["le"] else { continue }
            riskRows.append(["≤ \(bound)", Self.number(sample.value - below)])
            below = sample.value
        }
        riskRows.sort { (Double($0[0].dropFirst(2)) ?? .infinity) < (Double($1[0].dropFirst(2)) ?? .infinity) }
        riskRows = riskRows.filter { $0[1] != "0" }
        riskRows.append([
            "above the step-up threshold",
            Self.number(samples.total("attestkit_risk_metric_above_threshold_total")),
        ])
        body += Self.table("Risk metrics of refreshed receipts", "risk", ["risk metric", "receipts"], riskRows)
        body += Self.table(
            "Receipt refresh", "receipts", ["result", "total", "per minute"],
            rows("attestkit_receipt_refresh_total", by: ["result"]))
        // The backlog after this replica's last round: none yet before its first (or without receipt refresh).
        var backlog: [[String]] = []
        if samples.contains(where: { $0.name == "attestkit_receipt_refresh_backlog" }) {
            backlog = [
                ["keys due", Self.number(samples.total("attestkit_receipt_refresh_backlog"))],
                [
                    "oldest due waited (minutes)",
                    Self.number(samples.total("attestkit_receipt_refresh_oldest_due_seconds") / 60),
                ],
            ]
        }
        body += Self.table("Receipt refresh backlog", "backlog", ["", "value"], backlog)
        body += Self.table(
            "DeviceCheck calls to Apple", "devicecheck", ["operation · outcome", "total", "per minute"],
            rows("attestkit_devicecheck_requests_total", by: ["operation", "outcome"]))
        body += Self.table(
            "DeviceCheck fallback tokens", "fallback", ["result · source", "total", "per minute"],
            rows("attestkit_device_token_validations_total", by: ["result", "source"]))
        body += Self.table(
            "Session tokens issued", "tokens", ["trust", "total", "per minute"],
            rows("attestkit_tokens_issued_total", by: ["trust"]))
        body += Self.table(
            "Rate limiting", "ratelimits", ["limit", "total", "per minute"],
            rows("attestkit_rate_limited_total", by: ["limit"]))
        // The attestation ramp: attest challenges given, and installs deferred by reason (share, ceiling).
        let admitted = rows("attestkit_attest_challenges_admitted_total", by: []).map { ["admitted"] + $0.dropFirst() }
        let deferred = rows("attestkit_attestations_deferred_total", by: ["reason"]).map { row in
            ["deferred · \(row[0])"] + row.dropFirst()
        }
        body += Self.table(
            "Attestation ramp", "ramp", ["attest challenges", "total", "per minute"], admitted + deferred)
        let up = samples.total("attestkit_storage_up") >= 1
        body += Self.table(
            "Storage", "storage", ["", "value"],
            [
                ["state", up ? "up" : "DOWN"],
                ["requests refused (503)", Self.number(samples.total("attestkit_storage_errors_total"))],
            ])
        var latency: [[String]] = []
        let counts = samples.sum("attestkit_http_request_duration_seconds_count", by: ["route", "method"])
        let sums = samples.sum("attestkit_http_request_duration_seconds_sum", by: ["route", "method"])
        for (labels, count) in counts.sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) where count > 0 {
            let mean = (sums[labels] ?? 0) / count * 1_000
            latency.append([labels.reversed().joined(separator: " "), Self.number(count), String(format: "%.2f", mean)])
        }
        body += Self.table("Requests by route", "routes", ["route", "requests", "mean ms"], latency)
        var anchors: [[String]] = []
        for (labels, value) in samples.sum("attestkit_trust_anchor_expiry_timestamp_seconds", by: ["anchor"]).sorted(
            by: { $0.key.lexicographicallyPrecedes($1.key) })
        {
            anchors.append([labels[0], Self.number((value - now.timeIntervalSince1970) / 86_400)])
        }
        body += Self.table("Trust anchors", "anchors", ["root", "days to expiry"], anchors)
        let stamp = ISO8601DateFormatter().string(from: now)
        // The logout button: a form POST to this origin (`form-action 'self'`), no script.
        let logout = #"<form method="post" action="dashboard/logout"><button type="submit">Sign out</button></form>"#
        return Self.document(
            title: "AttestKit operations",
            body: "<header>\(logout)<h1>AttestKit operations</h1><p>\(Self.escape(stamp)) · refreshed every 30 s · "
                + "rates over "
                + "\(previous.map { Self.number($0.seconds) + " s" } ?? "– (next refresh)")</p></header><main>\(body)</main>",
            refresh: true)
    }

    /// The login page; `message` is shown above the form.
    package static func login(message: String?) -> String {
        document(
            title: "AttestKit operations: sign in",
            body: """
                <main class="login"><h1>AttestKit operations</h1>\
                \(message.map { "<p class=\"error\">\(escape($0))</p>" } ?? "")\
                <form method="post" action="login"><label for="token">Admin token</label>\
                <input id="token" name="token" type="password" autocomplete="current-password" required>\
                <button type="submit">Sign in</button></form></main>
                """,
            refresh: false)
    }

    private static func document(title: String, body: String, refresh: Bool) -> String {
        """
        <!doctype html><html lang="en"><head><meta charset="utf-8">\
        <meta name="viewport" content="width=device-width, initial-scale=1">\
        \(refresh ? "<meta http-equiv=\"refresh\" content=\"30\">" : "")<title>\(escape(title))</title>\
        <style>\(style)</style></head><body>\(body)</body></html>
        """
    }

    private static let style = """
        body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f7f9;color:#1d232b}\
        header{padding:12px 20px;background:#1d232b;color:#fff}header h1{margin:0;font-size:18px}\
        header p{margin:4px 0 0;color:#b9c2cc;font-size:12px}header form{float:right;margin:0}\
        main{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:12px;padding:12px 20px}\
        section{background:#fff;border:1px solid #dde2e7;border-radius:6px;padding:8px 12px}\
        h2{font-size:14px;margin:4px 0 8px}table{width:100%;border-collapse:collapse}\
        th,td{text-align:left;padding:3px 4px;border-bottom:1px solid #eef1f4}th{font-weight:600;color:#5a6470}\
        td.n{text-align:right;font-variant-numeric:tabular-nums}td.none{color:#8a949e}\
        main.login{display:block;max-width:360px;margin:80px auto;background:#fff;padding:20px;border-radius:6px}\
        main.login input{display:block;width:100%;margin:8px 0;padding:6px;box-sizing:border-box}\
        .error{color:#b00020}
        """
}
