extension ServerConfiguration {
    /// Where failed verifications are recorded (`record.*`), for `attestkit replay`.
    public struct RecordSettings: Sendable, Hashable {
        /// The directory bundles are written to (created with mode 0700 if missing).
        public var directory: String
        /// At most this many bundles are kept, oldest removed first.
        public var maximumBundles: Int
        /// At most this many bytes of bundles are kept, oldest removed first.
        public var maximumBytes: Int

        /// Creates settings; 1,000 bundles and 100 MiB by default.
        public init(directory: String, maximumBundles: Int = 1_000, maximumBytes: Int = 100 << 20) {
            self.directory = directory
            self.maximumBundles = maximumBundles
            self.maximumBytes = maximumBytes
        }
    }

    /// The `record.*` settings: `nil` without `record.directory`.
    static func record(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> RecordSettings? {
        let bundles = try settings.int("record.max-bundles")
        let bytes = try settings.int("record.max-bytes")
        guard let directory = try settings.string("record.directory") else {
            if bundles != nil || bytes != nil {
                throw ServerConfigurationError(
                    bundles != nil ? "record.max-bundles" : "record.max-bytes", "needs record.directory")
            }
            return nil
        }
        guard !directory.isEmpty else { throw ServerConfigurationError("record.directory", "is a directory path") }
        var record = RecordSettings(directory: directory)
        if let bundles {
            guard (1...1_000_000).contains(bundles) else {
                throw ServerConfigurationError("record.max-bundles", "is 1 to 1000000")
            }
            record.maximumBundles = bundles
        }
        if let bytes {
            guard bytes >= 1 << 20 else {
                throw ServerConfigurationError("record.max-bytes", "is at least 1048576 (one bundle at most)")
            }
            record.maximumBytes = bytes
        }
        return record
    }
}
