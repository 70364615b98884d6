#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Configuration
import Foundation
import SystemPackage

/// The secrets directory of `attestkit serve` (`--secrets-dir`, `ATTESTKIT_SECRETS_DIR`) as a configuration provider:
/// one file per setting, read once at start.
///
/// It keeps swift-configuration's `DirectoryFilesProvider` to the letter where that one is right: a key's file name
/// (components joined with `-`, any character but a letter, a digit or `-` as `_`: `admin.token` → `admin-token`),
/// the value (the file's text with surrounding white space trimmed, converted to the type asked for, lists split at
/// commas), every value a secret, hidden entries (`.name`) skipped. It differs in what it reads: that provider lists
/// only regular files and so silently skips a symbolic link, which is how Kubernetes mounts a Secret (`admin-token ->
/// ..data/admin-token`, `..data -> ..2026_11_27_...`), and a server started on Kubernetes would run without its admin
/// token, backend tokens and database password. This one reads through symbolic links and refuses, at start and
/// naming the file (never its content), every entry it cannot read as a setting:
///
/// - a name that names no setting (as before: a typo must not leave a default in place);
/// - a symbolic link to nothing, a loop of links, or a link that resolves outside the directory (Kubernetes' and a
///   projected volume's links point inside it; the server reads nothing the operator did not put there);
/// - a directory, or a special file (a device, a pipe, a socket), directly or through a link;
/// - a file larger than ``fileLimit``, or one that cannot be read.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
struct SecretsDirectoryProvider: Sendable {
    /// The largest file read: far above any token list or URL.
    static let fileLimit = 65_536

    /// The contents of each file, by file name.
    let files: [String: Data]

    /// Reads `directory`: every entry not hidden must be named after one of `known` (dotted keys) and resolve,
    /// inside the directory, to a regular file of at most ``fileLimit`` bytes.
    ///
    /// - Throws: ``ServerConfigurationError`` with the key `secrets-dir` and the path of the directory or the entry.
    init(directory: String, known: Set<String>) throws(ServerConfigurationError) {
        guard case .success(let root) = Self.resolve(directory),
            (try? FileManager.default.attributesOfItem(atPath: root)[.type] as? FileAttributeType) == .typeDirectory
        else {
            throw ServerConfigurationError("secrets-dir", "'\(directory)' is not a directory")
        }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw ServerConfigurationError("secrets-dir", "'\(directory)' cannot be read")
        }
        let settings = Set(known.map(Self.fileName(forKey:)))
        var files: [String: Data] = [:]
        for name in names.sorted() where !name.hasPrefix(".") {
            let path = "\(directory)/\(name)"
            guard settings.contains(name) else {
                let example = Self.fileName(forKey: "admin.token")
                throw ServerConfigurationError(
                    "secrets-dir", "'\(path)' names no setting (files are named like \(example))")
            }
            files[name] = try Self.contents(of: path, inside: root)
        }
        self.files = files
    }

    /// The file name of a dotted key, as `DirectoryFilesProvider` encodes it: `admin.token` → `admin-token`.
    static func fileName(forKey key: String) -> String {
        fileName(of: AbsoluteConfigKey(ConfigKey(key)))
    }

    /// The file name of a key, as `DirectoryFilesProvider` encodes it: the components joined with `-`, any
    /// character but a letter, a digit or `-` replaced with `_`.
    static func fileName(of key: AbsoluteConfigKey) -> String {
        key.components
            .map { component in
                String(component.map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" })
            }
            .joined(separator: "-")
    }

    /// The bytes of the regular file `path` resolves to, which must lie under `root` (a resolved directory).
    private static func contents(of path: String, inside root: String) throws(ServerConfigurationError) -> Data {
        let isLink =
            (try? FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType) == .typeSymbolicLink
        let resolved: String
        switch resolve(path) {
        case .success(let target):
            resolved = target
        case .failure(.noSuchFileOrDirectory) where isLink:
            throw ServerConfigurationError("secrets-dir", "'\(path)' is a symbolic link to nothing")
        case .failure(.tooManySymbolicLinkLevels):
            throw ServerConfigurationError("secrets-dir", "'\(path)' is a loop of symbolic links")
        case .failure:
            throw ServerConfigurationError("secrets-dir", "'\(path)' cannot be read")
        }
        let through = isLink ? "is a symbolic link to" : "is"
        guard resolved.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
            throw ServerConfigurationError(
                "secrets-dir", "'\(path)' is a symbolic link that leads outside the secrets directory")
        }
        switch try? FileManager.default.attributesOfItem(atPath: resolved)[.type] as? FileAttributeType {
        case .typeRegular?:
            break
        case .typeDirectory?:
            throw ServerConfigurationError("secrets-dir", "'\(path)' \(through) a directory, not a file")
        case nil:
            throw ServerConfigurationError("secrets-dir", "'\(path)' cannot be read")
        default:
            throw ServerConfigurationError(
                "secrets-dir", "'\(path)' \(through) a special file (a device, pipe or socket), not a regular file")
        }
        return try read(resolved, naming: path)
    }

    /// Reads at most ``fileLimit`` bytes of the regular file at `resolved` (a path without links). It is opened
    /// without following a link (one swapped in since the check is an error) and without blocking (a pipe swapped in
    /// cannot make the start wait).
    private static func read(_ resolved: String, naming path: String) throws(ServerConfigurationError) -> Data {
        let descriptor: FileDescriptor
        do {
            descriptor = try FileDescriptor.open(
                FilePath(resolved), .readOnly, options: [.noFollow, .nonBlocking, .closeOnExec])
        } catch {
            throw ServerConfigurationError("secrets-dir", "'\(path)' cannot be read")
        }
        defer { try? descriptor.close() }
        let handle = FileHandle(fileDescriptor: descriptor.rawValue, closeOnDealloc: false)
        let data: Data
        do {
            data = try handle.read(upToCount: fileLimit + 1) ?? Data()
        } catch {
            throw ServerConfigurationError("secrets-dir", "'\(path)' cannot be read")
        }
        guard data.count <= fileLimit else {
            throw ServerConfigurationError("secrets-dir", "'\(path)' is larger than \(fileLimit) bytes")
        }
        return data
    }

    /// `path` with every symbolic link resolved (`realpath`), or why it cannot be.
    private static func resolve(_ path: String) -> Result<String, Errno> {
        guard let resolved = realpath(path, nil) else { return .failure(Errno(rawValue: errno)) }
        defer { free(resolved) }
        return .success(String(cString: resolved))
    }

    /// The value of a file as `type`, as `DirectoryFilesProvider` converts it.
    /// - Throws: ``ServerConfigurationError`` naming the file, never its content, when it does not convert.
    private static func value(of data: Data, name: String, type: ConfigType) throws -> ConfigValue {
        let text = trimmed(String(decoding: data, as: UTF8.self))
        let items = text.split(separator: ",").map(trimmed)
        func converted<Value>(_ convert: (String) -> Value?) throws -> Value {
            guard let value = convert(text) else { throw mismatch(name, type) }
            return value
        }
        func convertedItems<Value>(_ convert: (String) -> Value?) throws -> [Value] {
            try items.map { item in
                guard let value = convert(item) else { throw mismatch(name, type) }
                return value
            }
        }
        let content: ConfigContent
        switch type {
        case .string: content = .string(text)
        case .int: content = .int(try converted { Int($0) })
        case .double: content = .double(try converted { Double($0) })
        case .bool: content = .bool(try converted { Bool($0) })
        case .bytes: content = .bytes(Array(data))
        case .stringArray: content = .stringArray(items)
        case .intArray: content = .intArray(try convertedItems { Int($0) })
        case .doubleArray: content = .doubleArray(try convertedItems { Double($0) })
        case .boolArray: content = .boolArray(try convertedItems { Bool($0) })
        case .byteChunkArray: content = .byteChunkArray([Array(data)])
        }
        return ConfigValue(content, isSecret: true)
    }

    /// `text` without the white space (`Character.isWhitespace`) around it, as `DirectoryFilesProvider` trims.
    private static func trimmed(_ text: some StringProtocol) -> String {
        String(text.trimmingPrefix(while: \.isWhitespace).reversed().trimmingPrefix(while: \.isWhitespace).reversed())
    }

    /// The error of a file whose text does not convert to `type`.
    private static func mismatch(_ name: String, _ type: ConfigType) -> ServerConfigurationError {
        ServerConfigurationError("secrets-dir", "the file '\(name)' is not a value of type \(type.rawValue)")
    }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension SecretsDirectoryProvider: ConfigProvider, ConfigSnapshot {
    var providerName: String { "SecretsDirectoryProvider" }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        let name = Self.fileName(of: key)
        return LookupResult(
            encodedKey: name, value: try files[name].map { try Self.value(of: $0, name: name, type: type) })
    }

    func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try value(forKey: key, type: type)
    }

    func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler:
            nonisolated(nonsending) (
                _ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>
            ) async throws -> Return
    ) async throws -> Return {
        try await watchValueFromValue(forKey: key, type: type, updatesHandler: updatesHandler)
    }

    func snapshot() -> any ConfigSnapshot { self }

    func watchSnapshot<Return: ~Copyable>(
        updatesHandler:
            nonisolated(nonsending) (
                _ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>
            ) async throws -> Return
    ) async throws -> Return {
        try await watchSnapshotFromSnapshot(updatesHandler: updatesHandler)
    }
}

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension SecretsDirectoryProvider: CustomStringConvertible, CustomDebugStringConvertible {
    /// `SecretsDirectoryProvider[3 files]`: never a value.
    var description: String { "SecretsDirectoryProvider[\(files.count) files]" }

    /// The file names, every value redacted.
    var debugDescription: String {
        let names = files.keys.sorted().map { "\($0)=<REDACTED>" }.joined(separator: ", ")
        return "SecretsDirectoryProvider[\(files.count) files: \(names)]"
    }
}
