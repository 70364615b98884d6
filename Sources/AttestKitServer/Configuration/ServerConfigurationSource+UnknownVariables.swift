@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension ServerConfigurationSource {
    /// An `ATTESTKIT_*` environment variable that names no setting: read by nothing, most likely a misspelt one
    /// (`ATTESTKIT_POLICY_VALIDATION_CATEGORY` for `ATTESTKIT_POLICY_VALIDATION_CATEGORIES`), which leaves that
    /// setting's default in place. `attestkit serve` names each in a warning at start.
    public struct UnknownVariable: Sendable, Hashable {
        /// The variable's name (never its value, which may be a secret).
        public let name: String
        /// The variable of a setting whose name is closest to it (at most three letters apart), or `nil`.
        public let suggestion: String?
    }

    /// The `ATTESTKIT_*` variables of `environment` that name no setting, sorted by name (the secrets directory's
    /// variable, ``secretsDirectoryVariable``, is one of AttestKit's own). A configuration file's or secrets
    /// directory's unknown names are refused instead; the environment is shared with other tools, so here they are
    /// reported, not refused.
    public static func unknownVariables(in environment: [String: String]) -> [UnknownVariable] {
        let known = ServerConfiguration.configurationKeys.map(environmentVariable(for:))
        let accepted = Set(known + [secretsDirectoryVariable])
        return environment.keys.filter { $0.hasPrefix(environmentPrefix) && !accepted.contains($0) }.sorted().map {
            name in
            let nearest = known.map { (variable: $0, distance: editDistance(name, $0, atMost: 3)) }
                .filter { $0.distance <= 3 }.min { $0.distance < $1.distance }
            return UnknownVariable(name: name, suggestion: nearest?.variable)
        }
    }

    /// The Levenshtein distance between `a` and `b` in Unicode scalars, or `limit + 1` once it exceeds `limit`.
    package static func editDistance(_ a: String, _ b: String, atMost limit: Int) -> Int {
        let (x, y) = (Array(a.unicodeScalars), Array(b.unicodeScalars))
        guard abs(x.count - y.count) <= limit else { return limit + 1 }
        var previous = Array(0...y.count)
        for i in x.indices {
            var current = [i + 1] + Array(repeating: 0, count: y.count)
            for j in y.indices {
                let substitution = previous[j] + (x[i] == y[j] ? 0 : 1)
                current[j + 1] = min(previous[j + 1] + 1, current[j] + 1, substitution)
            }
            // Every later row is at least this row's smallest entry.
            guard let smallest = current.min(), smallest <= limit else { return limit + 1 }
            previous = current
        }
        return min(previous[y.count], limit + 1)
    }
}
