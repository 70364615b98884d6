import AttestKit

/// The App IDs read back from the `app_id` column, parsed once per process.
///
/// Every key row a statement returns names its App ID as text, and parsing it checks the Team ID and bundle
/// identifier and hashes them (SHA-256, the `rpIdHash` assertions are checked against): on the assertion path that
/// was done for every counter advance. A deployment has a handful of App IDs, so the parsed values are kept by their
/// exact text in a small bounded cache; a text not in it is parsed (and refused) exactly as before.
///
/// Only ASCII texts are kept: Swift compares strings by canonical equivalence, so two different byte sequences of
/// non-ASCII text could find each other's entry, whose hash is of the other bytes. For ASCII, equal strings are
/// equal bytes. Apple's App IDs are ASCII; any other text is parsed every time.
enum StoredAppID {
    private static let parsed = BoundedCache<String, AppID>(capacity: 256)

    /// The App ID `text` names.
    /// - Throws: What ``AppID/init(_:)`` throws for a text that is not an App ID.
    static func parse(_ text: String) throws(AttestKitError) -> AppID {
        let ascii = text.utf8.allSatisfy { $0 < 0x80 }
        if ascii, let appID = parsed[text] { return appID }
        let appID = try AppID(text)
        if ascii { parsed.insert(appID, for: text) }
        return appID
    }
}
