public import AttestKit
import AttestKitApple
public import AttestKitStore
public import CoreMetrics
public import Foundation
import Metrics

/// The metrics the flows record, through swift-metrics into an injected factory: the HTTP service passes its
/// Prometheus-backed one, so `/metrics` shows them; an adopter passes its own, or none (the process-wide
/// `MetricsSystem.factory`, a no-op until bootstrapped).
///
/// Labels are closed sets (kinds, outcomes, error codes): nothing a client sends becomes a label.
public struct FlowMetrics: Sendable {
    /// The factory metrics are created with.
    public let factory: any MetricsFactory

    /// Metrics recorded through `factory`.
    public init(factory: any MetricsFactory = MetricsSystem.factory) { self.factory = factory }

    /// Creates, at zero, the counter series the alert rules of `deploy/prometheus/` read, so that a rate or an
    /// increase is defined from the first scrape rather than after the first event (an alert comparing the
    /// successes of an hour with zero has nothing to compare before the first success). Both edges call it once:
    /// `attestkit serve` when it builds its metrics, the Vapor integration when it is built; calling it again
    /// changes nothing.
    ///
    /// The series: verifications `accepted` and rejected with each watched code (replays, signatures, keys,
    /// challenges, freshness, policy), by kind; every receipt refresh result the refresh counts (`refreshed`,
    /// `not_modified`, `error`, each code of Apple's but `cancelled`, and the store's `key_not_found`,
    /// `key_revoked`, `receipt_not_newer`, `storage_unavailable`); DeviceCheck calls by operation, `ok` and each
    /// code of Apple's but `cancelled`; every rate limit; the
    /// attestation ramp; storage errors; dropped verification bundles; wrong credentials by audience; session
    /// tokens by trust; receipts above the risk threshold by environment. Not the guarded requests
    /// (`attestkit_guard_requests_total`, whose groups are the adopter's), nor the gauges (set on each scrape).
    public func initialiseSeries() {
        for kind in ["attestation", "assertion"] {
            zero("attestkit_verifications_total", [("kind", kind), ("outcome", "accepted"), ("code", "")])
            for code in Self.watchedCodes {
                zero("attestkit_verifications_total", [("kind", kind), ("outcome", "rejected"), ("code", code)])
            }
        }
        let appleCodes = AppleServiceError.Code.allCases.filter { $0 != .cancelled }.map(\.rawValue)
        let storeCodes: [StoreError.Code] = [.keyNotFound, .keyRevoked, .receiptNotNewer, .storageUnavailable]
        for result in ["refreshed", "not_modified", "error"] + appleCodes + storeCodes.map(\.rawValue) {
            zero("attestkit_receipt_refresh_total", [("result", result)])
        }
        for operation in ["query", "update", "validate"] {
            for outcome in ["ok"] + appleCodes {
                zero("attestkit_devicecheck_requests_total", [("operation", operation), ("outcome", outcome)])
            }
        }
        for limit in Self.rateLimits {
            zero("attestkit_rate_limited_total", [("limit", limit)])
        }
        zero("attestkit_attest_challenges_admitted_total", [])
        for reason in FlowError.DeferralReason.allCases {
            zero("attestkit_attestations_deferred_total", [("reason", reason.rawValue)])
        }
        zero("attestkit_storage_errors_total", [])
        for reason in BundleDropReason.allCases {
            zero("attestkit_verification_bundles_dropped_total", [("reason", reason.rawValue)])
        }
        for audience in Self.credentialAudiences {
            zero("attestkit_auth_failures_total", [("audience", audience)])
        }
        for trust in TrustLevel.allCases {
            zero("attestkit_tokens_issued_total", [("trust", trust.rawValue)])
        }
        for environment in AppAttestEnvironment.allCases {
            zero("attestkit_risk_metric_above_threshold_total", [("environment", environment.rawValue)])
        }
    }

    /// The rejection codes whose series exist from the start: replays, signatures, keys (stranded ones too),
    /// challenges, freshness.
    static let watchedCodes = [
        "counter_not_increasing", "challenge_consumed", "signature_invalid", "key_not_found", "key_revoked",
        "key_expired", "challenge_not_found", "challenge_expired", "timestamp_outside_window", "certificate_untrusted",
        "nonce_mismatch", "app_id_mismatch", "policy_validation_category", "policy_os_version", "app_not_accepted",
        "environment_not_accepted", "policy_bundle_version", "policy_validation_category_changed",
    ]

    /// Every rate limit ``rateLimited(_:)`` counts: the label values of `attestkit_rate_limited_total`.
    static let rateLimits = [
        "attestations_per_ip", "attestations_per_app", "challenges_per_ip", "auth_failures_per_ip",
        "dashboard_logins_per_ip", DeviceTokenValidator.budgetName,
    ]

    /// The labels of ``authFailure(_:)``: the credentialed audiences and the dashboard's login form.
    static let credentialAudiences = ["backend", "operator", "monitoring", "dashboard", "dashboard_login"]

    /// Creates the counter `label` with `dimensions`, at zero (or leaves it as it is).
    private func zero(_ label: String, _ dimensions: [(String, String)]) {
        Counter(label: label, dimensions: dimensions, factory: factory).increment(by: 0)
    }

    /// One verification (`attestation`, `assertion`, or `debug_token` at the token route) and its outcome:
    /// `accepted`, or the error code.
    public func verification(_ kind: String, code: String?, duration: Duration) {
        Counter(
            label: "attestkit_verifications_total",
            dimensions: [("kind", kind), ("outcome", code == nil ? "accepted" : "rejected"), ("code", code ?? "")],
            factory: factory
        ).increment()
        Metrics.Timer(label: "attestkit_verification_duration_seconds", dimensions: [("kind", kind)], factory: factory)
            .recordNanoseconds(duration.nanoseconds)
    }

    /// An assertion accepted with step-up asked for because its validation category changed since registration
    /// (`policy.validation-category-change` `step-up`), by `route`: `assertion` (`POST /v1/assertions/verify`),
    /// `guard` (a middleware or the decision route) or `token` (the token route).
    public func validationCategoryChangeStepUp(_ route: String) {
        Counter(
            label: "attestkit_validation_category_step_ups_total", dimensions: [("route", route)], factory: factory
        ).increment()
    }

    /// Why a verification bundle was not kept: the label of `attestkit_verification_bundles_dropped_total`.
    public enum BundleDropReason: String, Sendable, CaseIterable {
        /// Refusals came faster than the disk took them: past the recorder's `maximumPending`.
        case queueFull = "queue_full"
        /// It could not be encoded, was over a bundle's size limit, or its file could not be created or written.
        case unwritable
    }

    /// A verification bundle the recorder did not keep (`attestkit_verification_bundles_dropped_total`), by reason.
    public func verificationBundleDropped(_ reason: BundleDropReason) {
        Counter(
            label: "attestkit_verification_bundles_dropped_total", dimensions: [("reason", reason.rawValue)],
            factory: factory
        ).increment()
    }

    /// A session token issued, by the trust level that bought it (`app_attest`, `devicecheck` or `debug`).
    public func tokenIssued(trust: String) {
        Counter(label: "attestkit_tokens_issued_total", dimensions: [("trust", trust)], factory: factory).increment()
    }

    /// A request refused by the named rate limit.
    public func rateLimited(_ limit: String) {
        Counter(label: "attestkit_rate_limited_total", dimensions: [("limit", limit)], factory: factory).increment()
    }

    /// An attest challenge given (`attestkit_attest_challenges_admitted_total`): admitted by the attestation ramp, or
    /// with the ramp off.
    public func attestChallengeAdmitted() {
        Counter(label: "attestkit_attest_challenges_admitted_total", factory: factory).increment()
    }

    /// An install the attestation ramp deferred (`attestkit_attestations_deferred_total`), by reason: `share` or
    /// `ceiling`.
    public func attestationDeferred(_ reason: FlowError.DeferralReason) {
        Counter(
            label: "attestkit_attestations_deferred_total", dimensions: [("reason", reason.rawValue)], factory: factory
        ).increment()
    }

    /// One receipt exchange and its result (`refreshed`, `not_modified`, or an error code).
    public func receiptRefresh(_ result: String) {
        Counter(label: "attestkit_receipt_refresh_total", dimensions: [("result", result)], factory: factory)
            .increment()
    }

    /// The receipt refreshes due and not yet done, store-wide (every replica reports the same value):
    /// `attestkit_receipt_refresh_backlog`, the due keys (counted up to a cap), and
    /// `attestkit_receipt_refresh_oldest_due_seconds`, how long the oldest due one has waited at `now` (0 with none).
    public func receiptRefreshBacklog(_ backlog: ReceiptRefreshBacklog, now: Date) {
        Gauge(label: "attestkit_receipt_refresh_backlog", factory: factory).record(backlog.due)
        let waited = backlog.oldestDue.map { max(0, now.timeIntervalSince($0)) } ?? 0
        Gauge(label: "attestkit_receipt_refresh_oldest_due_seconds", factory: factory).record(waited)
    }

    /// One request decided by a ``RouteGuard``: its group, `enforce` or `report` (counted apart: what enforcing
    /// would refuse), the trust level that proved it (`none` when refused), `accepted` or `rejected` and the code.
    public func guardOutcome(group: String, mode: String, trust: String, code: String?) {
        Counter(
            label: "attestkit_guard_requests_total",
            dimensions: [
                ("group", group), ("mode", mode), ("trust", trust),
                ("outcome", code == nil ? "accepted" : "rejected"), ("code", code ?? ""),
            ],
            factory: factory
        ).increment()
    }

    /// One DeviceCheck token of the fallback: `valid` or `invalid`, answered by Apple or from the cache.
    public func deviceTokenValidation(valid: Bool, cached: Bool) {
        Counter(
            label: "attestkit_device_token_validations_total",
            dimensions: [("result", valid ? "valid" : "invalid"), ("source", cached ? "cache" : "apple")],
            factory: factory
        ).increment()
    }

    /// A key registered with its validation category (`none` without one), and its environment.
    public func keyRegistered(environment: AppAttestEnvironment, validationCategory: UInt32?) {
        Counter(
            label: "attestkit_keys_registered_total",
            dimensions: [
                ("environment", environment.rawValue),
                ("validation_category", validationCategory.map(String.init) ?? "none"),
            ],
            factory: factory
        ).increment()
    }

    /// A request answered 503 because storage was unavailable (`attestkit_storage_errors_total`).
    public func storageError() {
        Counter(label: "attestkit_storage_errors_total", factory: factory).increment()
    }

    /// The store answered (`true`) or not the last check (readiness, the key gauges).
    public func storage(up: Bool) {
        Gauge(label: "attestkit_storage_up", factory: factory).record(up ? 1 : 0)
    }

    /// This replica's clock minus its store's, in seconds, from the last measurement (`attestkit_clock_skew_seconds`,
    /// ``ClockSkewCheck``).
    public func clockSkew(seconds: Double) {
        Gauge(label: "attestkit_clock_skew_seconds", factory: factory).record(seconds)
    }

    /// Sets the keys gauge (`attestkit_keys`) from the store's counts.
    public func keys(_ counts: KeyCounts) {
        for environment in AppAttestEnvironment.allCases {
            for state in KeyState.allCases {
                Gauge(
                    label: "attestkit_keys",
                    dimensions: [("environment", environment.rawValue), ("state", state.rawValue)], factory: factory
                ).record(counts.count(environment: environment, state: state))
            }
        }
    }

    /// A wrong credential presented to a route of `audience` (`backend`, `operator`, `monitoring`, `dashboard`,
    /// `dashboard_login`).
    public func authFailure(_ audience: String) {
        Counter(label: "attestkit_auth_failures_total", dimensions: [("audience", audience)], factory: factory)
            .increment()
    }

    /// One DeviceCheck call and its outcome (`ok` or an error code).
    public func deviceCheck(_ operation: String, outcome: String) {
        Counter(
            label: "attestkit_devicecheck_requests_total",
            dimensions: [("operation", operation), ("outcome", outcome)],
            factory: factory
        ).increment()
    }

    /// Runs one DeviceCheck call to Apple and counts its outcome (``deviceCheck(_:outcome:)``): the routes' calls and
    /// the fallback's validations of `X-AttestKit-Device-Token` alike, so that Apple refusing or rate limiting this
    /// server is seen whichever asked. A call its caller cancelled is not counted: it says nothing of Apple.
    func countingDeviceCheck<Result>(
        _ operation: String, _ body: () async throws(AppleServiceError) -> Result
    ) async throws(AppleServiceError) -> Result {
        do {
            let result = try await body()
            deviceCheck(operation, outcome: "ok")
            return result
        } catch {
            if error.code != .cancelled { deviceCheck(operation, outcome: error.code.rawValue) }
            throw error
        }
    }

    /// The risk metric of a receipt Apple just gave: its distribution.
    public func riskMetric(_ metric: Int) {
        Recorder(label: "attestkit_risk_metric", aggregate: true, factory: factory).record(metric)
    }

    /// A receipt whose risk metric is above the step-up threshold.
    public func riskAboveThreshold(environment: AppAttestEnvironment) {
        Counter(
            label: "attestkit_risk_metric_above_threshold_total", dimensions: [("environment", environment.rawValue)],
            factory: factory
        ).increment()
    }
}

extension Duration {
    /// The duration in whole nanoseconds, saturating.
    package var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }
}
