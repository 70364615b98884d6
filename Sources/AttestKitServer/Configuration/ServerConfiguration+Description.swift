import AttestKit
import AttestKitStore

extension ServerConfiguration: CustomStringConvertible, CustomReflectable {
    /// The listener, the apps, the environments and the storage (its password hidden); never a token, a key or a
    /// password, so that printing, logging or `dump`ing a configuration shows no secret.
    public var description: String {
        let storage = (try? StoreURL(storageURL))?.description ?? "(unreadable)"
        return "ServerConfiguration(\(host):\(port), apps: \(self.appIDs.map(\.description)), environments: "
            + "\(self.environments), storage: \(storage), apple: \(apple?.description ?? "none"))"
    }

    /// No children: the stored properties hold the admin, backend and debug tokens, Apple's key and the database
    /// password.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension ServerConfiguration.Apple: CustomStringConvertible, CustomReflectable {
    /// The key id, team id and DeviceCheck environment; never the private key.
    public var description: String {
        "Apple(keyID: \(keyID), teamID: \(teamID), deviceCheck: \(deviceCheckEnvironment.rawValue))"
    }

    /// No children: ``privateKeyPEM`` is the `.p8` key.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
