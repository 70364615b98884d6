public import Foundation

/// A ``KeyIDStore`` in a file readable by its owner only, for platforms without a Keychain.
///
/// The file holds the ``KeyState`` as JSON, which is not a secret (the private key stays on the device), but
/// keeping it to the owner avoids another user of the machine swapping it.
public struct FileKeyIDStore: KeyIDStore {
    /// The file.
    public let url: URL

    /// Creates a store in `url`; the directory is created on the first save.
    public init(url: URL) { self.url = url }

    /// `file:` and the file's standardized path.
    public var identity: String { "file:" + url.standardizedFileURL.path }

    /// The stored state, or `nil` when the file does not exist or is empty.
    public func load() throws -> KeyState? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let data = try Data(contentsOf: url)
        guard data.count <= 64 * 1024 else {
            throw CocoaError(.fileReadTooLarge)
        }
        if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return nil }
        return try KeyState.decoded(data)
    }

    /// Writes `state` atomically, mode 0600.
    public func save(_ state: KeyState) throws {
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try state.encoded().write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }

    /// Deletes the file, if it exists.
    public func remove() throws {
        guard FileManager.default.fileExists(atPath: url.path) else { return }
        try FileManager.default.removeItem(at: url)
    }
}
