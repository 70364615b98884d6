public import Foundation

/// A ``KeyIDStore`` in a file readable by its owner only, for platforms without a Keychain.
///
/// The file holds the Base64 key identifier, which is not a secret (the private key stays on the device), but
/// keeping it to the owner avoids another user of the machine swapping it.
public struct FileKeyIDStore: KeyIDStore {
    /// The file.
    public let url: URL

    /// Creates a store in `url`; the directory is created on the first save.
    public init(url: URL) { self.url = url }

    /// The stored key identifier, or `nil` when the file does not exist or is empty.
    public func load() throws -> String? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let text = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    /// Writes `keyID` atomically, mode 0600.
    public func save(_ keyID: String) throws {
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(keyID.utf8).write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }

    /// Deletes the file, if it exists.
    public func remove() throws {
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        try FileManager.default.removeItem(at: url)
    }
}
