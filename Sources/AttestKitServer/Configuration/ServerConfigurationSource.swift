public import AttestKitFlows
import AttestKitStore
public import Configuration
public import Foundation
import Yams

/// Where `attestkit serve` reads its settings: command-line flags, then `ATTESTKIT_*` environment variables, then a
/// directory of secret files, then a JSON or YAML file, then the defaults of ``ServerConfiguration``.
///
/// The first layer that has a key wins, even when its value is wrong: a malformed `ATTESTKIT_HTTP_PORT` is an error,
/// not a reason to use the file's port. The keys are listed at ``ServerConfiguration/init(reader:)``.
///
/// - Flags are dotted keys (`http.port`) with typed values, or strings that ``ServerConfiguration/init(reader:)``
///   parses like environment values (`"8081"`, `"A.b,C.d"`).
/// - Environment variables are `ATTESTKIT_` + the key upper-cased with `.` and `-` as `_` (`ATTESTKIT_HTTP_PORT`).
///   Other variables are not read; lists are comma-separated.
/// - A secrets directory (as container platforms mount secrets) holds one file per setting, named after the key
///   with `.` as `-` (`admin-token`, `backend-tokens`, `storage-url`), the file's text the value (surrounding white
///   space trimmed). Every value read from it is a secret. A file that names no setting is refused; hidden entries
///   (`.name`) are skipped. Symbolic links are read through (Kubernetes mounts a Secret as links into a hidden
///   timestamped directory), but a link to nothing, to a directory or special file, or out of the directory is
///   refused at start, naming the entry, as is a file over 64 KiB.
/// - The file holds one object, JSON, or YAML when its name ends in `.yaml` or `.yml` (swift-configuration's
///   `FileProvider` with `JSONSnapshot` or `YAMLSnapshot`). Keys may nest (`{"http": {"port": 8081}}`, the
///   documented form) or be dotted (`{"http.port": 8081}`); don't give one key both ways. Lists are arrays, numbers
///   numbers; `true` and `false` are refused (no setting takes one). A key the server does not know is refused, so a
///   typo does not silently leave a default in place; so is a key given twice, or a `null`. YAML is checked on the
///   nodes the provider reads (no anchors, aliases, merge keys, complex keys or tags beyond the core ones, no
///   unquoted base-60 numbers such as `1:30`), so the check and the provider always read the same settings.
///
/// The secret settings (`admin.token`, `admin.previous-tokens`, `backend.tokens`, `debug.tokens`, `storage.password`,
/// and `storage.url`, which may carry a database password) are secrets in every layer: swift-configuration redacts
/// them in descriptions and access logs. `attestkit serve` refuses them on its command line
/// (``commandLineRefusal(key:value:)``).
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
public enum ServerConfigurationSource {
    /// The prefix of the environment variables read.
    public static let environmentPrefix = "ATTESTKIT_"

    /// The largest configuration file read.
    static let fileLimit = 1_048_576

    /// The environment variable that names a secrets directory, when `--secrets-dir` does not.
    public static let secretsDirectoryVariable = "ATTESTKIT_SECRETS_DIR"

    /// Reads, layers and validates a configuration.
    ///
    /// - Parameters:
    ///   - flags: Values from the command line, by dotted key; the highest layer.
    ///   - environment: The environment; only `ATTESTKIT_*` variables are read.
    ///   - file: The path of a JSON or YAML (`.yaml`, `.yml`) configuration file, or `nil` for none. It must exist.
    ///   - secretsDirectory: A directory of one file per setting, or `nil` for the one `ATTESTKIT_SECRETS_DIR`
    ///     names, if any. It must exist.
    ///   - accessReporter: Receives every read of a setting; the values of secrets are marked secret, so the
    ///     events' descriptions redact them.
    /// - Throws: ``ServerConfigurationError`` naming the key, or `config-file` (`secrets-dir`) with the path of a
    ///   missing, unreadable or malformed file (directory).
    public static func load(
        flags: [String: ConfigValue] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        file: String? = nil,
        secretsDirectory: String? = nil,
        accessReporter: (any AccessReporter)? = nil
    ) async throws(ServerConfigurationError) -> ServerConfiguration {
        let reader = try await reader(
            flags: flags, environment: environment, file: file, secretsDirectory: secretsDirectory,
            accessReporter: accessReporter)
        return try ServerConfiguration(reader: reader)
    }

    /// A reader of the layers, for ``ServerConfiguration/init(reader:)`` or for settings of one's own.
    ///
    /// - Parameters: As for ``load(flags:environment:file:secretsDirectory:accessReporter:)``.
    /// - Throws: ``ServerConfigurationError`` for an unknown flag, or `config-file` (`secrets-dir`) for a missing,
    ///   unreadable or malformed file (directory).
    public static func reader(
        flags: [String: ConfigValue] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        file: String? = nil,
        secretsDirectory: String? = nil,
        accessReporter: (any AccessReporter)? = nil
    ) async throws(ServerConfigurationError) -> ConfigReader {
        ConfigReader(
            providers: try await providers(
                flags: flags, environment: environment, file: file, secretsDirectory: secretsDirectory),
            accessReporter: accessReporter)
    }

    /// The providers of the layers, highest first: flags, the `ATTESTKIT_*` environment, the secrets directory and
    /// the JSON or YAML file (when there are).
    ///
    /// - Parameters: As for ``load(flags:environment:file:secretsDirectory:accessReporter:)``.
    /// - Throws: ``ServerConfigurationError`` for an unknown flag, or `config-file` (`secrets-dir`) for a missing,
    ///   unreadable or malformed file (directory).
    public static func providers(
        flags: [String: ConfigValue] = [:],
        environment: [String: String] = ProcessInfo.processInfo.environment,
        file: String? = nil,
        secretsDirectory: String? = nil
    ) async throws(ServerConfigurationError) -> [any ConfigProvider] {
        let known = Set(ServerConfiguration.configurationKeys)
        let secrets = ServerConfiguration.secretKeys
        var flagValues: [AbsoluteConfigKey: ConfigValue] = [:]
        for (key, value) in flags {
            guard known.contains(key) else { throw ServerConfigurationError(key, "is not a setting (flag)") }
            var value = value
            if secrets.contains(key) { value.isSecret = true }
            flagValues[AbsoluteConfigKey(ConfigKey(key))] = value
        }
        let prefixed = environment.filter { $0.key.hasPrefix(environmentPrefix) }
        let secretVariables = Set(secrets.map(environmentVariable(for:)))
        var providers: [any ConfigProvider] = [
            InMemoryProvider(name: "flags", values: flagValues),
            EnvironmentVariablesProvider(environmentVariables: prefixed, secretsSpecifier: .specific(secretVariables))
                .prefixKeys(with: "attestkit"),
        ]
        if let directory = secretsDirectory ?? environment[secretsDirectoryVariable] {
            providers.append(try secretsProvider(directory: directory, known: known))
        }
        if let file {
            providers.append(try await fileProvider(path: file, known: known, secrets: secrets))
        }
        return providers
    }

    /// Why `key` may not be set to `value` on a command line, or `nil` when it may. A command line is readable by
    /// every user of the machine (`ps`, `/proc`), so every secret setting of `attestkit serve` is
    /// refused there, except a `storage.url` that carries no password: its password comes from `storage.password`
    /// (`ATTESTKIT_STORAGE_PASSWORD`, or the secrets directory's file `storage-password`) instead. The refusal
    /// never repeats the value.
    public static func commandLineRefusal(key: String, value: String) -> ServerConfigurationError? {
        guard ServerConfiguration.secretKeys.contains(key) else { return nil }
        if key == "storage.url" {
            guard carriesPassword(value) else { return nil }
            return ServerConfigurationError(
                key,
                "carries a password, which a command line shows to every user of the machine: give the URL without "
                    + "it (postgres://user@host/db) and the password in \(environmentVariable(for: "storage.password")) "
                    + "or the secrets directory file \(secretFileName(for: "storage.password"))")
        }
        return ServerConfigurationError(
            key,
            "is a secret, never taken from the command line (every user of the machine can read it there): set "
                + "\(environmentVariable(for: key)), the secrets directory file \(secretFileName(for: key)), "
                + "or --config")
    }

    /// A storage URL split into the URL without its password and the password (`nil` when it names none), for a
    /// program that starts `attestkit serve`: the URL on the command line, the password in
    /// `ATTESTKIT_STORAGE_PASSWORD`.
    public static func splitStoragePassword(_ url: String) -> (url: String, password: String?) {
        guard carriesPassword(url), var components = URLComponents(string: url), let password = components.password
        else { return (url, nil) }
        components.password = nil
        return (components.string ?? url, password)
    }

    /// Whether a storage URL names a password (`postgres://user:password@...`, an empty one too).
    static func carriesPassword(_ url: String) -> Bool {
        if let parsed = try? StoreURL(url) { return parsed.postgres?.password != nil }
        return URLComponents(string: url)?.password != nil
    }

    /// The file name of a key in a secrets directory, as swift-configuration's `DirectoryFilesProvider` names it:
    /// `admin.token` → `admin-token`.
    public static func secretFileName(for key: String) -> String {
        SecretsDirectoryProvider.fileName(forKey: key)
    }

    /// The secrets directory's provider (`SecretsDirectoryProvider`), after checking that every file in it names a
    /// setting and resolves, inside the directory, to a regular file of at most 64 KiB.
    private static func secretsProvider(
        directory: String,
        known: Set<String>
    ) throws(ServerConfigurationError) -> any ConfigProvider {
        try SecretsDirectoryProvider(directory: directory, known: known)
    }

    /// The environment variable of a dotted key:
    /// `rate-limit.challenges-per-ip` → `ATTESTKIT_RATE_LIMIT_CHALLENGES_PER_IP`.
    public static func environmentVariable(for key: String) -> String {
        environmentPrefix + String(key.uppercased().map { $0 == "." || $0 == "-" ? "_" : $0 })
    }

    /// Whether a configuration file is YAML (`.yaml`, `.yml`) rather than JSON.
    static func isYAML(_ path: String) -> Bool {
        let lowered = path.lowercased()
        return lowered.hasSuffix(".yaml") || lowered.hasSuffix(".yml")
    }

    /// The file's provider, JSON or YAML, after checking that the file holds one object of known keys.
    private static func fileProvider(
        path: String,
        known: Set<String>,
        secrets: Set<String>
    ) async throws(ServerConfigurationError) -> any ConfigProvider {
        let data = try contents(ofFile: path, key: "config-file", limit: fileLimit)
        let yaml = isYAML(path)
        // YAML is checked on the nodes the provider reads (`YAMLFileCheck`), never through Swift values built from
        // them: that construction traps on some files and reads others differently from the provider.
        let leaves =
            yaml
            ? try YAMLFileCheck.leaves(of: String(decoding: data, as: UTF8.self), path: path, resolver: yamlBooleans)
            : try jsonLeaves(of: data, path: path)
        var seen: Set<String> = []
        for leaf in leaves {
            let key = leaf.key
            guard known.contains(key) else { throw ServerConfigurationError(key, "is not a setting (in '\(path)')") }
            // Given both nested and dotted (`{"a.b": 1, "a": {"b": 2}}`), the provider keeps one and drops the other.
            guard seen.insert(key).inserted else {
                throw ServerConfigurationError(key, "is given twice, nested and dotted (in '\(path)')")
            }
            // The providers drop a null, and the setting's default would apply: say so instead.
            if leaf.items.contains(.null) {
                throw ServerConfigurationError(key, "is null; leave it out for its default (in '\(path)')")
            }
            // The providers read `true` as 1 where a number is wanted, and no setting is a boolean: refuse them.
            if leaf.items.contains(.boolean) {
                throw ServerConfigurationError(key, "is true or false, which no setting takes (in '\(path)')")
            }
        }
        do {
            let location = ConfigReader(
                provider: InMemoryProvider(values: ["filePath": .init(.string(path), isSecret: false)]))
            if yaml {
                return try await FileProvider<YAMLSnapshot>(
                    parsingOptions: .init(secretsSpecifier: .specific(secrets)), config: location)
            }
            return try await FileProvider<JSONSnapshot>(
                parsingOptions: .init(secretsSpecifier: .specific(secrets)), config: location)
        } catch {
            throw ServerConfigurationError("config-file", "'\(path)' cannot be loaded: \(error)")
        }
    }

    /// YAML 1.2's booleans only (`true`, `false`): YAML 1.1's `off`, `on`, `yes` and `no`, which Yams' default
    /// resolver takes for booleans too, are the text the settings' documented values use (`background.jobs: off`,
    /// `enforcement.mode: off`), and swift-configuration reads them as text.
    private static let yamlBooleans: Resolver = {
        do {
            return try Resolver.default.replacing(.bool, with: "^(?:true|True|TRUE|false|False|FALSE)$")
        } catch {
            return Resolver.default.removing(.bool)
        }
    }()

    /// The leaves of a JSON file's one object by dotted key, the way swift-configuration's JSON provider names
    /// them, sorted by key.
    /// - Throws: ``ServerConfigurationError`` naming `config-file` for a file that is not JSON or holds no object,
    ///   or the key given twice in one object (JSONSerialization keeps the last).
    private static func jsonLeaves(
        of data: Data,
        path: String
    ) throws(ServerConfigurationError) -> [FileLeaf] {
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw ServerConfigurationError("config-file", "'\(path)' does not hold one JSON object")
            }
            object = parsed
        } catch let error as ServerConfigurationError {
            throw error
        } catch {
            throw ServerConfigurationError("config-file", "'\(path)' is not valid JSON")
        }
        if let duplicate = JSONDuplicateKeys.first(in: data) {
            throw ServerConfigurationError(duplicate, "is given twice (in '\(path)'): only one would be read")
        }
        let booleanType = type(of: NSNumber(value: true))
        var leaves: [FileLeaf] = []
        var pending: [(String, Any)] = object.map { ($0.key, $0.value) }
        while let (key, value) = pending.popLast() {
            if let nested = value as? [String: Any] {
                pending.append(contentsOf: nested.map { ("\(key).\($0.key)", $0.value) })
            } else {
                let items = (value as? [Any] ?? [value]).map { item -> FileValue in
                    if item is NSNull { return .null }
                    return type(of: item) == booleanType ? .boolean : .other
                }
                leaves.append(FileLeaf(key: key, items: items))
            }
        }
        return leaves.sorted { $0.key < $1.key }
    }

    /// The bytes of a file of at most `limit` bytes.
    /// - Throws: ``ServerConfigurationError`` naming `key` and the path when the file is missing, unreadable or
    ///   larger.
    static func contents(ofFile path: String, key: String, limit: Int) throws(ServerConfigurationError) -> Data {
        guard FileManager.default.fileExists(atPath: path) else {
            throw ServerConfigurationError(key, "'\(path)' does not exist")
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ServerConfigurationError(key, "'\(path)' cannot be read")
        }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw ServerConfigurationError(key, "'\(path)' cannot be read")
        }
        guard data.count <= limit else {
            throw ServerConfigurationError(key, "'\(path)' is larger than \(limit) bytes")
        }
        return data
    }

    /// The UTF-8 text of a file of at most `limit` bytes.
    static func text(ofFile path: String, key: String, limit: Int) throws(ServerConfigurationError) -> String {
        guard let text = String(data: try contents(ofFile: path, key: key, limit: limit), encoding: .utf8) else {
            throw ServerConfigurationError(key, "'\(path)' is not UTF-8 text")
        }
        return text
    }
}
