import AttestKitFlows

extension AttestKitApplication.Configuration.RateLimits {
    /// The `rate-limit.*` settings, from the reader scoped to `rate-limit`, over `defaults`.
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    static func read(_ settings: StrictConfigReader, over defaults: Self) throws(ServerConfigurationError) -> Self {
        var limits = defaults
        if let limit = try settings.int("attestations-per-ip") { limits.attestationsPerIP = limit }
        if let limit = try settings.int("attestations-per-app") { limits.attestationsPerApp = limit }
        if let limit = try settings.int("challenges-per-ip") { limits.challengesPerIP = limit }
        if let limit = try settings.int("dashboard-logins-per-ip") { limits.dashboardLoginsPerIP = limit }
        if let limit = try settings.int("auth-failures-per-ip") { limits.authFailuresPerIP = limit }
        if let length = try settings.int("ipv6-prefix-length") { limits.ipv6PrefixLength = length }
        return limits
    }
}
