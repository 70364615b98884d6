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

    /// Parses `TEAMID.bundle.identifier` as a configuration is given one, refusing a Team ID that Apple would not
    /// issue: exactly 10 characters of `A`–`Z` and `0`–`9`.
    ///
    /// Use it where a person types the App ID (a configuration file, a flag): `com.example.app`, a bundle
    /// identifier without its Team ID, is a well-formed ``init(_:)`` App ID that no device will ever attest for, so
    /// every attestation would fail later with `app_id_mismatch`.
    /// - Throws: ``AttestKitError/Code/appIdMalformed`` with a message that says what a Team ID is.
    public init(validating string: String) throws(AttestKitError) {
        let teamID = string.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        guard Self.isTeamID(teamID) else {
            throw AttestKitError(
                .appIdMalformed,
                "an App ID starts with your 10-character Team ID (A-Z, 0-9), as in ABCDE12345.com.example.app; "
                    + "'\(teamID)' is not one")
        }
        try self.init(string)
    }

    /// Whether `text` has the shape of an Apple Developer Team ID: exactly 10 characters of `A`–`Z` and `0`–`9`.
    public static func isTeamID(_ text: some StringProtocol) -> Bool {
        text.utf8.count == 10 && text.utf8.allSatisfy { (0x41...0x5A).contains($0) || (0x30...0x39).contains($0) }
    }

    /// `TEAMID.bundle.identifier`.
    public var description: String { "\(teamID).\(bundleID)" }
}
