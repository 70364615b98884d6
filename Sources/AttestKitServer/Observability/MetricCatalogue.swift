/// The `# HELP` text of every metric the service exposes: one place, so that `/metrics`, the alert rules
/// (`deploy/prometheus/`) and the dashboards name the same things.
enum MetricCatalogue {
    /// Every metric name and its help text.
    static let help: [String: String] = [
        "attestkit_http_requests_total": "HTTP requests answered, by route pattern, method and status.",
        "attestkit_http_request_duration_seconds": "Time to answer an HTTP request, by route pattern and method.",
        "attestkit_http_connections_closed_total": "Connections closed by the server because the client stalled.",
        "attestkit_http_connections_refused_total": "Connections refused because the maximum was open.",
        "attestkit_http_connections_open": "Connections open now, across listeners.",
        "attestkit_verifications_total":
            "Attestations, assertions, debug tokens and DeviceCheck tokens (debug_token, device_token, at the token route) verified, by kind, outcome and error code (replays: counter_not_increasing, challenge_consumed).",
        "attestkit_verification_duration_seconds": "Time to verify an attestation or assertion, by kind.",
        "attestkit_rate_limited_total": "Requests refused by a rate limit, by limit.",
        "attestkit_attest_challenges_admitted_total":
            "Attest challenges given: installs the attestation ramp admitted (every one while it is off).",
        "attestkit_attestations_deferred_total":
            "Installs the attestation ramp deferred (429 attestation_deferred), by reason: share (ramp.share) or ceiling (ramp.daily-ceiling).",
        "attestkit_receipt_refresh_total":
            "Receipt exchanges with Apple, by result (refreshed, not_modified, or an error code).",
        "attestkit_receipt_refresh_backlog":
            "Keys whose receipt refresh is due and not yet done, store-wide (counted up to 100000), as of the last refresh round.",
        "attestkit_receipt_refresh_oldest_due_seconds":
            "How long the oldest due receipt refresh has waited, store-wide (0 when none is due), as of the last refresh round.",
        "attestkit_risk_metric_above_threshold_total": "Receipts whose risk metric is above the step-up threshold.",
        "attestkit_devicecheck_requests_total":
            "DeviceCheck calls to Apple, by operation and outcome (ok or an error code).",
        "attestkit_keys": "Keys stored, by environment and state.",
        "attestkit_guard_requests_total":
            "Requests to guarded route groups, by group, mode (enforce, or report: what enforcing would do), trust level, outcome and code.",
        "attestkit_device_token_validations_total":
            "DeviceCheck tokens of the fallback, by result and source (apple or cache).",
        "attestkit_storage_up": "1 when the store answered the last check, 0 when it did not.",
        "attestkit_clock_skew_seconds":
            "This replica's clock minus the database's at the last check, in seconds (0 within the round trip).",
        "attestkit_storage_errors_total": "Requests answered 503 because storage was unavailable.",
        "attestkit_trust_anchor_expiry_timestamp_seconds":
            "When a trust anchor (root certificate) expires, Unix seconds.",
        "attestkit_keys_registered_total": "Keys registered, by environment and validation category.",
        "attestkit_risk_metric": "Risk metrics of the receipts Apple gave (distribution).",
        "attestkit_dashboard_logins_total": "Operator dashboard logins, by result.",
        "attestkit_auth_failures_total":
            "Wrong credentials (bearer tokens, dashboard sessions and logins), by audience; past rate-limit.auth-failures-per-ip a client is refused with 429 (attestkit_rate_limited_total{limit=\"auth_failures_per_ip\"}).",
        "attestkit_validation_category_step_ups_total":
            "Assertions accepted with step-up asked for because the key's validation category changed since registration (policy.validation-category-change step-up), by route (assertion, guard, token).",
        "attestkit_verification_bundles_dropped_total":
            "Verification bundles of refused requests not kept (record.directory), by reason: queue_full (refusals came faster than the disk took them) or unwritable (encoding, size or a file error; logged).",
        "attestkit_tokens_issued_total":
            "Session tokens issued, by the trust level that bought them (app_attest, devicecheck, debug).",
    ]

    /// The help text of `name`, or a generic one.
    static func help(_ name: String) -> String { help[name] ?? "AttestKit metric \(name)." }
}
