import AttestKit
import Foundation

extension AppID {
    /// The App ID's SHA-256 (its `rpIDHash`) in lowercase hex: 64 characters whatever the App ID's length, for names
    /// in the store that must stay bounded (the budgets of the ramp and of a long App ID's attestations).
    var digestHex: String {
        rpIDHash.map { String(format: "%02x", $0) }.joined()
    }
}
