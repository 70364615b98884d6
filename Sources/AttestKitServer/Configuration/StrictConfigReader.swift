import AttestKitFlows
import Configuration
import Synchronization

/// Reads settings from a `ConfigReader` without ever falling back to a default silently.
///
/// swift-configuration's getters return `nil` both for a missing key and for a value that a provider could not
/// convert (`ATTESTKIT_HTTP_PORT=abc`, a JSON string where a number belongs); its `required...` getters throw for
/// both. To tell the two apart, each getter here tries the wanted type, then a string it parses itself (so a flag
/// or environment value given as text works), and when both fail, probes every type: a key some provider has in
/// another type is an error naming the key, never the default. Each getter returns `nil` only when no provider has
/// the key at all.
///
/// Whether a value is a secret comes from the table of settings (``ServerSetting/isSecret``), never from the caller.
/// Error reasons never contain the value read.
@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
struct StrictConfigReader {
    /// The reader of all layers, scoped to ``section`` when there is one.
    let reader: ConfigReader

    /// Receives the key and type of every read, for the tests that hold the reads to ``ServerSetting/all``.
    let readLog: ReadLog?

    /// The section the reader is scoped to (`tokens`), or `nil` for the whole configuration.
    let section: String?

    /// A reader of the whole configuration.
    init(reader: ConfigReader, readLog: ReadLog? = nil) {
        self.init(reader: reader, readLog: readLog, section: nil)
    }

    /// A reader of `section`, through `reader` scoped to it.
    private init(reader: ConfigReader, readLog: ReadLog?, section: String?) {
        self.reader = reader
        self.readLog = readLog
        self.section = section
    }

    /// A reader of one section, next to the type it configures: `scoped(to: "tokens").string("ttl")` reads
    /// `tokens.ttl` through swift-configuration's `ConfigReader.scoped(to:)`. Errors, secrecy and the read log name
    /// the whole key.
    func scoped(to section: String) -> StrictConfigReader {
        StrictConfigReader(reader: reader.scoped(to: ConfigKey(section)), readLog: readLog, section: key(section))
    }

    /// The whole key of `name` in the reader's section: `ttl` → `tokens.ttl`.
    func key(_ name: String) -> String {
        section.map { "\($0).\(name)" } ?? name
    }

    /// The keys read and how each was read last.
    final class ReadLog: Sendable {
        private let reads = Mutex<[String: ServerSetting.ValueType]>([:])

        /// Every key read so far, with the type it was read as.
        var types: [String: ServerSetting.ValueType] { reads.withLock { $0 } }

        /// Records a read of `key` as `type`.
        func record(_ key: String, _ type: ServerSetting.ValueType) {
            reads.withLock { $0[key] = type }
        }
    }

    /// A string, or `nil` when absent.
    func string(_ name: String) throws(ServerConfigurationError) -> String? {
        let key = self.key(name)
        readLog?.record(key, .string)
        let configKey = ConfigKey(name)
        let isSecret = Self.isSecret(key)
        if let value = reader.string(forKey: configKey, isSecret: isSecret) { return value }
        try refuseIfPresent(name, expected: "a string")
        return nil
    }

    /// An integer (a number without a fractional part, or a string of one), or `nil` when absent.
    func int(_ name: String) throws(ServerConfigurationError) -> Int? {
        let key = self.key(name)
        readLog?.record(key, .integer)
        let configKey = ConfigKey(name)
        if let value = reader.int(forKey: configKey) { return value }
        if let text = reader.string(forKey: configKey) {
            guard let value = Int(text.trimmingSpaces) else { throw ServerConfigurationError(key, "is not an integer") }
            return value
        }
        try refuseIfPresent(name, expected: "an integer")
        return nil
    }

    /// A finite number (an integer, a decimal, or a string of one), or `nil` when absent.
    func double(_ name: String) throws(ServerConfigurationError) -> Double? {
        let key = self.key(name)
        readLog?.record(key, .number)
        let configKey = ConfigKey(name)
        let value: Double
        if let number = reader.double(forKey: configKey) {
            value = number
        } else if let number = reader.int(forKey: configKey) {
            value = Double(number)
        } else if let text = reader.string(forKey: configKey) {
            guard let number = Double(text.trimmingSpaces) else {
                throw ServerConfigurationError(key, "is not a number")
            }
            value = number
        } else {
            try refuseIfPresent(name, expected: "a number")
            return nil
        }
        guard value.isFinite else { throw ServerConfigurationError(key, "is not a finite number") }
        return value
    }

    /// A list of strings (an array, or a comma-separated string whose empty items are dropped), or `nil` when
    /// absent.
    func strings(_ name: String) throws(ServerConfigurationError) -> [String]? {
        let key = self.key(name)
        readLog?.record(key, .strings)
        let configKey = ConfigKey(name)
        let isSecret = Self.isSecret(key)
        if let values = reader.stringArray(forKey: configKey, isSecret: isSecret) {
            return values.map(\.trimmingSpaces).filter { !$0.isEmpty }
        }
        if let text = reader.string(forKey: configKey, isSecret: isSecret) { return Self.split(text) }
        try refuseIfPresent(name, expected: "a list of strings")
        return nil
    }

    /// A list of words and integers (an array of strings, an array of integers, or a comma-separated string), as
    /// text, or `nil` when absent.
    func words(_ name: String) throws(ServerConfigurationError) -> [String]? {
        if let values = reader.intArray(forKey: ConfigKey(name)) {
            readLog?.record(key(name), .strings)
            return values.map(String.init)
        }
        return try strings(name)
    }

    /// A list of integers (an array, or a comma-separated string), or `nil` when absent.
    func ints(_ name: String) throws(ServerConfigurationError) -> [Int]? {
        let key = self.key(name)
        readLog?.record(key, .integers)
        let configKey = ConfigKey(name)
        if let values = reader.intArray(forKey: configKey) { return values }
        if let text = reader.string(forKey: configKey) {
            var values: [Int] = []
            for item in Self.split(text) {
                guard let value = Int(item) else { throw ServerConfigurationError(key, "is a list of integers") }
                values.append(value)
            }
            return values
        }
        try refuseIfPresent(name, expected: "a list of integers")
        return nil
    }

    /// A value of a string enumeration, read through swift-configuration's conversion of `RawRepresentable`
    /// strings (then a string with spaces around it), or `nil` when absent.
    func choice<Value: RawRepresentable<String> & CaseIterable>(
        _ name: String,
        as type: Value.Type
    ) throws(ServerConfigurationError) -> Value? {
        let key = self.key(name)
        let configKey = ConfigKey(name)
        if let value = reader.string(forKey: configKey, as: Value.self, isSecret: Self.isSecret(key)) {
            readLog?.record(key, .choice)
            return value
        }
        let text = try string(name)
        readLog?.record(key, .choice)
        guard let text else { return nil }
        guard let value = Value(rawValue: text.trimmingSpaces) else {
            throw ServerConfigurationError(key, "is one of \(Value.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    /// A value of a type swift-configuration converts from a string (``ConfigStringSetting``), read through the
    /// reader's own typed accessor, or `nil` when absent. A string that does not convert is an error naming the key
    /// and why (the type's ``ConfigStringSetting/refusal(of:)``), never `nil`.
    func value<Value: ConfigStringSetting>(
        _ name: String,
        as type: Value.Type
    ) throws(ServerConfigurationError) -> Value? {
        let key = self.key(name)
        let configKey = ConfigKey(name)
        if let value = reader.string(forKey: configKey, as: Value.self, isSecret: Self.isSecret(key)) {
            readLog?.record(key, .string)
            return value
        }
        // Not of the type: a string that does not convert is refused, another type or none is told by `string`.
        if let text = try string(name) { throw ServerConfigurationError(key, Value.refusal(of: text)) }
        return nil
    }

    /// A list of values of a type swift-configuration converts from a string (``ConfigStringSetting``): read through
    /// the reader's own typed accessor, else as ``strings(_:)`` reads a list (a comma-separated string, items
    /// trimmed, empty ones dropped), each converted; `nil` when absent. An item that does not convert is an error
    /// naming the key and why.
    func values<Value: ConfigStringSetting>(
        _ name: String,
        as type: Value.Type
    ) throws(ServerConfigurationError) -> [Value]? {
        let key = self.key(name)
        let configKey = ConfigKey(name)
        if let values = reader.stringArray(forKey: configKey, as: Value.self, isSecret: Self.isSecret(key)) {
            readLog?.record(key, .strings)
            return values
        }
        guard let texts = try strings(name) else { return nil }
        var values: [Value] = []
        for text in texts {
            guard let value = Value(configString: text) else {
                throw ServerConfigurationError(key, Value.refusal(of: text))
            }
            values.append(value)
        }
        return values
    }

    /// Throws when any provider has `key` in any type: the caller's type did not fit it.
    private func refuseIfPresent(_ name: String, expected: String) throws(ServerConfigurationError) {
        let key = self.key(name)
        let configKey = ConfigKey(name)
        let isSecret = Self.isSecret(key)
        let present =
            reader.string(forKey: configKey, isSecret: isSecret) != nil
            || reader.int(forKey: configKey, isSecret: isSecret) != nil
            || reader.double(forKey: configKey, isSecret: isSecret) != nil
            || reader.bool(forKey: configKey, isSecret: isSecret) != nil
            || reader.bytes(forKey: configKey, isSecret: isSecret) != nil
            || reader.stringArray(forKey: configKey, isSecret: isSecret) != nil
            || reader.intArray(forKey: configKey, isSecret: isSecret) != nil
            || reader.doubleArray(forKey: configKey, isSecret: isSecret) != nil
            || reader.boolArray(forKey: configKey, isSecret: isSecret) != nil
            || reader.byteChunkArray(forKey: configKey, isSecret: isSecret) != nil
        if present { throw ServerConfigurationError(key, "is not \(expected)") }
    }

    /// Whether the table of settings marks `key` secret.
    private static func isSecret(_ key: String) -> Bool {
        ServerSetting.secretKeys.contains(key)
    }

    /// The trimmed, non-empty items of a comma-separated list.
    private static func split(_ text: String) -> [String] {
        text.split(separator: ",").map { String($0).trimmingSpaces }.filter { !$0.isEmpty }
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs and line breaks.
    fileprivate var trimmingSpaces: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
