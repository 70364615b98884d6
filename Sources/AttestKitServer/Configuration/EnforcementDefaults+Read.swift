import AttestKitFlows
import Foundation

extension AttestKitApplication.Configuration.EnforcementDefaults {
    /// The `enforcement.*` settings, from the reader scoped to `enforcement`, over `defaults`.
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    static func read(_ settings: StrictConfigReader, over defaults: Self) throws(ServerConfigurationError) -> Self {
        var enforcement = defaults
        if let mode = try settings.choice("mode", as: EnforcementMode.self) { enforcement.mode = mode }
        if let rollout = try settings.double("rollout") { enforcement.rollout = rollout }
        if let salt = try settings.string("rollout-salt") { enforcement.rolloutSalt = salt }
        if let trust = try settings.choice("minimum-trust", as: TrustLevel.self) {
            enforcement.minimumTrust = trust
        }
        if let choice = try settings.choice("without-subject", as: SubjectlessEnforcement.self) {
            enforcement.enforcesWithoutSubject = choice == .enforce
        }
        return enforcement
    }

    /// `enforcement.groups`, from the reader scoped to `enforcement`: each entry `NAME:MODE[:ROLLOUT[:MINIMUM-TRUST]]`
    /// (`payments:enforce`, `feed:report`, `beta:enforce:0.25:devicecheck`), over `defaults` (the group `default`'s
    /// settings: salt and requests without a subject are the same for every group).
    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    static func groups(
        _ settings: StrictConfigReader, over defaults: Self
    ) throws(ServerConfigurationError) -> [String: Self] {
        let key = settings.key("groups")
        var groups: [String: Self] = [:]
        for entry in try settings.strings("groups") ?? [] {
            let parts = entry.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard (2...4).contains(parts.count) else {
                throw ServerConfigurationError(key, "holds '\(entry)': give NAME:MODE[:ROLLOUT[:MINIMUM-TRUST]]")
            }
            let name = parts[0]
            guard name != "default", groups[name] == nil else {
                throw ServerConfigurationError(key, "names the group '\(name)' twice (default is enforcement.*)")
            }
            var group = defaults
            guard let mode = EnforcementMode(rawValue: parts[1]) else {
                throw ServerConfigurationError(key, "holds '\(entry)': the mode is enforce, report or off")
            }
            group.mode = mode
            if parts.count > 2 {
                guard let rollout = Double(parts[2]), rollout.isFinite, (0...1).contains(rollout) else {
                    throw ServerConfigurationError(key, "holds '\(entry)': the rollout is a fraction from 0 to 1")
                }
                group.rollout = rollout
            } else {
                group.rollout = 1
            }
            if parts.count > 3 {
                guard let trust = TrustLevel(rawValue: parts[3]) else {
                    throw ServerConfigurationError(
                        key, "holds '\(entry)': the least trust is app_attest, devicecheck or debug")
                }
                group.minimumTrust = trust
            } else {
                group.minimumTrust = .appAttest
            }
            do {
                _ = try group.policy(group: name)
            } catch {
                throw ServerConfigurationError(key, "holds '\(entry)': the name \(error.reason)")
            }
            groups[name] = group
        }
        return groups
    }

    /// The values of `enforcement.without-subject`.
    private enum SubjectlessEnforcement: String, CaseIterable {
        case enforce
        case report
    }
}
