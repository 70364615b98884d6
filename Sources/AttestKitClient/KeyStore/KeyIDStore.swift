public import Foundation
import Synchronization

/// Where ``AppAttestManager`` keeps the identifier of the attested key between launches.
///
/// Only the identifier is stored (the private key never leaves the Secure Enclave), and only once the service
/// has accepted the key's attestation, so a stored identifier always names a registered key. Use
/// ``KeychainKeyIDStore`` on Apple platforms, ``FileKeyIDStore`` or ``MemoryKeyIDStore`` elsewhere.
public protocol KeyIDStore: Sendable {
    /// The stored key identifier, or `nil` when none is stored.
    func load() throws -> String?
    /// Stores `keyID`, replacing any previous one.
    func save(_ keyID: String) throws
    /// Forgets the stored key identifier, if any.
    func remove() throws
}

/// A ``KeyIDStore`` in memory: forgotten when the process ends. For tests and previews.
public final class MemoryKeyIDStore: KeyIDStore {
    private let keyID: Mutex<String?>

    /// Creates a store, optionally holding `keyID`.
    public init(_ keyID: String? = nil) { self.keyID = Mutex(keyID) }

    /// The stored key identifier.
    public func load() -> String? { keyID.withLock { $0 } }
    /// Stores `keyID`.
    public func save(_ keyID: String) { self.keyID.withLock { $0 = keyID } }
    /// Forgets the key identifier.
    public func remove() { keyID.withLock { $0 = nil } }
}

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
