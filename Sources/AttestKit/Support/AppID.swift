import Crypto

/// An App ID: `TEAMID.bundle.identifier`, the identity App Attest binds keys to.
///
/// An App Clip uses its parent app's App ID. The relying-party hash in authenticator data is
/// SHA-256 of the UTF-8 App ID.
public struct AppID: Sendable, Hashable, CustomStringConvertible {
    /// The Apple Developer Team ID (10 characters).
    public let teamID: String
    /// The bundle identifier.
    public let bundleID: String
    /// SHA-256 of the UTF-8 App ID, as it appears in authenticator data.
    public let rpIDHash: [UInt8]

    /// Creates an App ID from its two parts.
    /// - Throws: ``AttestKitError/Code/appIdMalformed`` if either part is empty, the team id contains
    ///   a dot, or the result is longer than 255 bytes.
    public init(teamID: String, bundleID: String) throws(AttestKitError) {
        guard !teamID.isEmpty, !bundleID.isEmpty, !teamID.contains("."),
            teamID.utf8.count + bundleID.utf8.count < 255,
            !(teamID + bundleID).unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F })
        else {
            throw AttestKitError(.appIdMalformed, "an App ID is TEAMID.bundle.identifier")
        }
        self.teamID = teamID
        self.bundleID = bundleID
        self.rpIDHash = Array(SHA256.hash(data: Array("\(teamID).\(bundleID)".utf8)))
    }

    /// Parses `TEAMID.bundle.identifier`.
    /// - Throws: ``AttestKitError/Code/appIdMalformed`` when there is no dot or a part is empty.
    public init(_ string: String) throws(AttestKitError) {
        guard let dot = string.firstIndex(of: ".") else {
            throw AttestKitError(.appIdMalformed, "an App ID is TEAMID.bundle.identifier")
        }
        try self.init(teamID: String(string[..<dot]), bundleID: String(string[string.index(after: dot)...]))
    }

    /// `TEAMID.bundle.identifier`.
    public var description: String { "\(teamID).\(bundleID)" }
}
