public import AttestKit
public import AttestKitStore

/// The apps and environments whose keys may still assert: the configuration's (`apps`, `environments`), checked at
/// every assertion, so that a key registered under an App ID or environment the service no longer accepts (the
/// configuration changed since) is refused, before its signature, challenge or counter are looked at.
///
/// Registration checks the same two settings (AttestKit's `app_id_mismatch` and `environment_mismatch`); at an
/// assertion `app_id_mismatch` already means "signed for another App ID than the key's", so a stranded key gets
/// codes of its own: `app_not_accepted` and `environment_not_accepted` (403).
public struct KeyAcceptance: Sendable, Hashable {
    /// The App IDs accepted.
    public let appIDs: Set<AppID>
    /// The environments accepted.
    public let environments: EnvironmentPolicy

    /// Accepts the keys of `appIDs` attested in `environments`.
    public init(appIDs: some Sequence<AppID>, environments: EnvironmentPolicy) {
        self.appIDs = Set(appIDs)
        self.environments = environments
    }

    /// Whether `record`'s App ID and environment are still accepted (``check(_:)`` would not refuse it).
    public func accepts(_ record: KeyRecord) -> Bool {
        appIDs.contains(record.appID) && environments.allows(record.environment)
    }

    /// Refuses `record` when its App ID or environment is no longer accepted.
    /// - Throws: `app_not_accepted`, then `environment_not_accepted` (403).
    public func check(_ record: KeyRecord) throws(FlowError) {
        guard appIDs.contains(record.appID) else {
            throw FlowError(
                .appNotAccepted, .refused,
                "the key was registered for an App ID this service no longer accepts (apps); attest a new key")
        }
        guard environments.allows(record.environment) else {
            throw FlowError(
                .environmentNotAccepted, .refused,
                "the key was registered in \(record.environment.rawValue), which this service no longer accepts "
                    + "(environments: \(environments))")
        }
    }
}

extension FlowError.Code {
    /// A key registered for an App ID the configuration no longer accepts (`app_not_accepted`).
    public static let appNotAccepted = FlowError.Code("app_not_accepted")
    /// A key registered in an environment the configuration no longer accepts (`environment_not_accepted`).
    public static let environmentNotAccepted = FlowError.Code("environment_not_accepted")
}
