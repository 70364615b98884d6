import AttestKitFlows

extension ServerConfiguration {
    /// The `record.*` settings, from the reader scoped to `record`: `nil` without `record.directory`.
    static func record(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> RecordSettings? {
        let bundles = try settings.int("max-bundles")
        let bytes = try settings.int("max-bytes")
        let perKey = try settings.int("max-bundles-per-key")
        let unknownBundles = try settings.int("unknown-max-bundles")
        let unknownBytes = try settings.int("unknown-max-bytes")
        guard let directory = try settings.string("directory") else {
            let given = [
                (settings.key("max-bundles"), bundles), (settings.key("max-bytes"), bytes),
                (settings.key("max-bundles-per-key"), perKey),
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
        if let perKey {
            guard (1...record.maximumBundles).contains(perKey) else {
                throw ServerConfigurationError(settings.key("max-bundles-per-key"), "is 1 to record.max-bundles")
            }
            record.maximumBundlesPerKey = perKey
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
