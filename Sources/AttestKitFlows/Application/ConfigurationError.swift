/// A setting that cannot be used, and why: what ``AttestKitApplication/Configuration/validate()`` and the service's
/// configuration reader throw, naming the setting by its configuration key.
public struct ConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The configuration key (`http.port`, `apps`, ...).
    public let key: String
    /// What is wrong.
    public let reason: String

    /// Creates an error.
    public init(_ key: String, _ reason: String) {
        self.key = key
        self.reason = reason
    }

    /// `key: reason`.
    public var description: String { "\(key): \(reason)" }
}
