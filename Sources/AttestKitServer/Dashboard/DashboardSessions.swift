import AttestKitFlows

/// The operator dashboard's browser sessions, kept by the flows (`AttestKitFlows.DashboardSessions`), which both
/// edges share.
typealias DashboardSessions = AttestKitFlows.DashboardSessions
