import AttestKit
public import Logging

extension ServerConfiguration {
    /// What `attestkit serve` says at start about a configuration that runs but leaves something off, or on that
    /// must never be on in production: each line with its level, in the order logged.
    public var startNotices: [(level: Logger.Level, message: String)] {
        var notices: [(level: Logger.Level, message: String)] = []
        if !self.trustAnchors.isApple {
            notices.append(
                (
                    .critical,
                    "TRUSTING A TEST CERTIFICATE AUTHORITY: attestations and receipts from the software Apple are "
                        + "accepted. Never run this configuration in production."
                ))
        }
        if self.appIDs.isEmpty {
            notices.append((.warning, "no app is configured (apps): attestations are refused with apps_not_configured"))
        }
        if self.backendTokens.isEmpty {
            notices.append(
                (
                    .warning,
                    "no backend token (backend.tokens): assertion checks and DeviceCheck answer backend_not_configured"
                ))
        }
        if !self.runsBackgroundJobs {
            notices.append(
                (.notice, "background jobs off on this replica (background.jobs): no receipt refresh, no cleanup"))
        }
        if self.apple == nil {
            notices.append(
                (.notice, "no Apple key: DeviceCheck answers apple_not_configured and receipts are not refreshed"))
            if self.policy.riskMetricThreshold != nil {
                // Risk metrics come only from receipts traded with Apple: only a replica with a key stores any.
                notices.append(
                    (
                        .warning,
                        "policy.risk-metric-threshold rates the risk metrics a replica with an Apple key stores; "
                            + "this one has none: without such a replica no key is ever rated or stepped up by it"
                    ))
            }
        }
        return notices
    }
}
