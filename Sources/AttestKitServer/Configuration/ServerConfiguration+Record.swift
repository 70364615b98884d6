extension ServerConfiguration {
    /// Where failed verifications are recorded (`record.*`), for `attestkit replay`.
    public struct RecordSettings: Sendable, Hashable {
        /// The directory bundles are written to (created with mode 0700 if missing).
        public var directory: String
        /// At most this many bundles of known keys are kept, oldest removed first.
        public var maximumBundles: Int
        /// At most this many bytes of bundles of known keys are kept, oldest removed first.
        public var maximumBytes: Int
        /// At most this many bundles of unknown keys and malformed input are kept (0: none recorded), oldest removed
        /// first; they never remove a known key's bundle (`VerificationRecorder.Quota`).
        public var unknownMaximumBundles: Int
        /// At most this many bytes of bundles of unknown keys and malformed input are kept.
        public var unknownMaximumBytes: Int

        /// Creates settings; 1,000 bundles and 100 MiB of known keys, 100 bundles and 10 MiB of the rest by default.
        public init(
            directory: String, maximumBundles: Int = 1_000, maximumBytes: Int = 100 << 20,
            unknownMaximumBundles: Int = 100, unknownMaximumBytes: Int = 10 << 20
        ) {
            self.directory = directory
            self.maximumBundles = maximumBundles
            self.maximumBytes = maximumBytes
            self.unknownMaximumBundles = unknownMaximumBundles
            self.unknownMaximumBytes = unknownMaximumBytes
        }
    }

    /// The `record.*` settings, from the reader scoped to `record`: `nil` without `record.directory`.
    static func record(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> RecordSettings? {
        let bundles = try settings.int("max-bundles")
        let bytes = try settings.int("max-bytes")
        let unknownBundles = try settings.int("unknown-max-bundles")
        let unknownBytes = try settings.int("unknown-max-bytes")
        guard let directory = try settings.string("directory") else {
            let given = [
                (settings.key("max-bundles"), bundles), (settings.key("max-bytes"), bytes),
                (settings.key("unknown-max-bundles"), unknownBundles),
                (settings.key("unknown-max-bytes"), unknownBytes),
            ]
            if let (key, _) = given.first(where: { $0.1 != nil }) {
                throw ServerConfigurationError(key, "needs record.directory")
            }
            return nil
        }
        guard !directory.isEmpty else {
            throw ServerConfigurationError(settings.key("directory"), "is a directory path")
        }
        var record = RecordSettings(directory: directory)
        if let bundles {
            guard (1...1_000_000).contains(bundles) else {
                throw ServerConfigurationError(settings.key("max-bundles"), "is 1 to 1000000")
            }
            record.maximumBundles = bundles
        }
        if let bytes {
            guard bytes >= 1 << 20 else {
                throw ServerConfigurationError(settings.key("max-bytes"), "is at least 1048576 (one bundle at most)")
            }
            record.maximumBytes = bytes
        }
        if let unknownBundles {
            guard (0...1_000_000).contains(unknownBundles) else {
                throw ServerConfigurationError(settings.key("unknown-max-bundles"), "is 0 (none recorded) to 1000000")
            }
            record.unknownMaximumBundles = unknownBundles
        }
        if let unknownBytes {
            guard unknownBytes >= 1 << 20 else {
                throw ServerConfigurationError(
                    settings.key("unknown-max-bytes"), "is at least 1048576 (one bundle at most)")
            }
            record.unknownMaximumBytes = unknownBytes
        }
        return record
    }
}
