import AttestKit

extension AttestKitApplication.Configuration: CustomStringConvertible, CustomReflectable {
    /// The apps and environments; never the admin, backend or debug tokens, nor the keys of tokens and key
    /// attestation.
    public var description: String {
        "AttestKitApplication.Configuration(apps: \(appIDs.map(\.description)), environments: \(environments))"
    }

    /// No children: the stored properties hold the credentials and signing keys.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
