import AttestKit
import Crypto
import Synchronization
public import Foundation

extension SimulatedDevice {
    /// The state file's format name; a file of another format is refused.
    static let stateFormat = "attestkit-simulated-device/1"

    /// The JSON of a state file.
    private struct StateFile: Codable {
        var format: String
        var notice: String
        var softwareApple: SoftwareApple.Snapshot
        var device: DeviceState
    }

    private struct DeviceState: Codable {
        var appID: String
        var environment: AppAttestEnvironment
        var osVersion: String
        var iOS27Extensions: Bool
        var bundleVersion: String
        var validationCategory: UInt32
        var appleExtendedKeyUsage: Bool
        /// Absent in files written before the option existed: no extension then.
        var keyAccessControl: KeyAccessControl?
        var keys: [KeyState]
    }

    private struct KeyState: Codable {
        var keyID: String
        /// Base64 of the raw P-256 scalar.
        var privateKey: String
        var counter: UInt32
        var attested: Bool
        var receipt: String?
    }

    /// Writes the device and its software Apple (keys, certificates, counters, receipts) to a JSON file, readable
    /// by the owner only.
    ///
    /// The file holds the private keys of a **test** CA and of simulated device keys: nothing a real device or
    /// Apple would ever give out, and nothing of value. Keep it out of production systems all the same.
    /// - Throws: ``SoftwareAppleError/Code/invalidState`` when the file cannot be written.
    public func save(to url: URL) throws(SoftwareAppleError) {
        let keys = keys.withLock { keys in
            keys.map { key in
                KeyState(
                    keyID: key.keyID.base64, privateKey: key.privateKey.rawRepresentation.base64EncodedString(),
                    counter: key.counter, attested: key.attested,
                    receipt: key.receipt.map { Data($0).base64EncodedString() })
            }
        }
        let file = StateFile(
            format: Self.stateFormat,
            notice:
                "AttestKitTesting simulator state: TEST private keys of a software Apple, not Apple's. Never trust it in production.",
            softwareApple: apple.snapshot,
            device: DeviceState(
                appID: configuration.appID.description, environment: configuration.environment,
                osVersion: configuration.osVersion, iOS27Extensions: configuration.iOS27Extensions,
                bundleVersion: configuration.bundleVersion, validationCategory: configuration.validationCategory,
                appleExtendedKeyUsage: configuration.appleExtendedKeyUsage,
                keyAccessControl: configuration.keyAccessControl, keys: keys))
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            let data = try encoder.encode(file)
            let directory = url.deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
            guard PrivateFile.save(Array(data), to: temporary.path) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                throw SoftwareAppleError(.invalidState, "cannot write \(temporary.path)")
            }
            // rename(2) replaces the old file atomically, so a crash never leaves half a state file.
            guard rename(temporary.path, url.path) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                throw SoftwareAppleError(.invalidState, "cannot replace \(url.path)")
            }
        } catch let error as SoftwareAppleError {
            throw error
        } catch {
            throw SoftwareAppleError(.invalidState, "cannot save the simulator state: \(error.localizedDescription)")
        }
    }

    /// The largest state file read (a device's keys and receipts take a few kilobytes each): a larger file, an
    /// endless FIFO or `/dev/zero` is refused after this many bytes, never held whole.
    package static let maximumStateBytes = 64 << 20

    /// Reads a device and its software Apple from a file written by ``save(to:)``.
    ///
    /// At most 64 MiB are read: a larger file (or an endless one, such as a FIFO or `/dev/zero`) is refused.
    /// - Throws: ``SoftwareAppleError/Code/invalidState`` for an unreadable, oversized or inconsistent file.
    public static func load(from url: URL) throws(SoftwareAppleError) -> SimulatedDevice {
        let data: Data
        do {
            data = try BoundedFile.read(path: url.path, limit: maximumStateBytes)
        } catch .overLimit {
            throw SoftwareAppleError(.invalidState, "\(url.path) is over \(BoundedFile.size(maximumStateBytes))")
        } catch {
            throw SoftwareAppleError(.invalidState, "cannot read \(url.path)")
        }
        return try load(data, readFrom: url.path)
    }

    /// Reads a device and its software Apple from the bytes of a file written by ``save(to:)``, read from `path`
    /// (named in errors) by a reader that bounds them, as `attestkit` does.
    /// - Throws: ``SoftwareAppleError/Code/invalidState`` for an inconsistent file.
    package static func load(_ data: Data, readFrom path: String) throws(SoftwareAppleError) -> SimulatedDevice {
        let file: StateFile
        do {
            file = try JSONDecoder().decode(StateFile.self, from: data)
        } catch {
            throw SoftwareAppleError(.invalidState, "\(path) is not a simulator state file")
        }
        guard file.format == stateFormat else {
            throw SoftwareAppleError(.invalidState, "\(path) has format \(file.format), expected \(stateFormat)")
        }
        let apple = try SoftwareApple(snapshot: file.softwareApple)
        let state = file.device
        guard let appID = try? AppID(state.appID) else {
            throw SoftwareAppleError(.invalidState, "the state's App ID is malformed")
        }
        var configuration = Configuration(
            appID: appID, environment: state.environment, iOS27: state.iOS27Extensions, osVersion: state.osVersion,
            bundleVersion: state.bundleVersion, validationCategory: state.validationCategory)
        configuration.appleExtendedKeyUsage = state.appleExtendedKeyUsage
        configuration.keyAccessControl = state.keyAccessControl ?? .none
        var keys = [Key]()
        for key in state.keys {
            guard let raw = Data(base64Encoded: key.privateKey),
                let privateKey = try? P256.Signing.PrivateKey(rawRepresentation: raw),
                let keyID = try? KeyID(string: key.keyID), keyID == KeyID(publicKey: privateKey.publicKey)
            else {
                throw SoftwareAppleError(.invalidState, "a key of the state is unusable")
            }
            let receipt = try key.receipt.map { text throws(SoftwareAppleError) in
                guard let bytes = Data(base64Encoded: text) else {
                    throw SoftwareAppleError(.invalidState, "a receipt of the state is not Base64")
                }
                return Array(bytes)
            }
            keys.append(
                Key(
                    keyID: keyID, privateKey: privateKey, counter: key.counter, attested: key.attested,
                    receipt: receipt))
        }
        return SimulatedDevice(apple: apple, configuration: configuration, keys: keys)
    }
}

/// A file read whole, but bounded: at most `limit + 1` bytes are held, so that a huge file, an endless FIFO or
/// `/dev/zero` is refused instead of filling memory. The one bounded reader of the simulator's state files and of
/// every file the `attestkit` command reads. Not for adopters (`package` access).
package enum BoundedFile {
    /// Why a read failed.
    package enum Failure: Error, Sendable, Hashable {
        /// The file cannot be opened or read.
        case unreadable
        /// It holds more than the limit.
        case overLimit
    }

    /// The bytes of `handle` up to its end.
    /// - Throws: ``Failure/overLimit`` once it gives more than `limit` bytes, ``Failure/unreadable`` when a read fails.
    package static func read(_ handle: FileHandle, limit: Int) throws(Failure) -> Data {
        let data: Data
        do {
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw .unreadable
        }
        guard data.count <= limit else { throw .overLimit }
        return data
    }

    /// The bytes of the file at `path`, read as ``read(_:limit:)`` reads them, then closed.
    /// - Throws: ``Failure/unreadable`` when it cannot be opened, or as ``read(_:limit:)``.
    package static func read(path: String, limit: Int) throws(Failure) -> Data {
        let handle: FileHandle
        do {
            handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        } catch {
            throw .unreadable
        }
        defer { try? handle.close() }
        return try read(handle, limit: limit)
    }

    /// A limit for people: `64 MiB`, or `1000 bytes` when it is not a whole number of MiB.
    package static func size(_ limit: Int) -> String {
        limit % (1 << 20) == 0 ? "\(limit >> 20) MiB" : "\(limit) bytes"
    }
}
