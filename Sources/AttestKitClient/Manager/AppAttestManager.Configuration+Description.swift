extension AppAttestManager.Configuration: CustomStringConvertible, CustomReflectable {
    /// The settings, with the debug token only said to be set or not: printing, logging or `dump`ing a
    /// configuration never shows it.
    public var description: String {
        let debug = (debugToken?.isEmpty ?? true) ? "none" : "set"
        return "AppAttestManager.Configuration(freshness: \(freshness), switchToChallengesOnClockSkew: "
            + "\(switchToChallengesOnClockSkew), reattestAfterRevocation: \(reattestAfterRevocation), initialBackoff: "
            + "\(initialBackoff), maximumBackoff: \(maximumBackoff), unsupportedBackoff: \(unsupportedBackoff), "
            + "maximumDeferral: \(maximumDeferral), debugToken: \(debug), debugTokenOutsideSimulator: "
            + "\(debugTokenOutsideSimulator))"
    }

    /// No children: `dump` and debuggers show ``description`` rather than the debug token.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
