public import AttestKit

/// An error of the mock Apple services themselves: a configuration it cannot use, or a server that did not start.
/// (What the mock *answers* are HTTP statuses, not these.)
public struct MockAppleError: CodedError, Sendable {
    /// What went wrong.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The stable snake_case name.
        public let rawValue: String

        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The verification key, a fault or another setting is unusable.
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
        /// The server stopped or failed before it was listening.
        public static let notRunning = Code(rawValue: "not_running")

        /// The stable name.
        public var description: String { rawValue }
    }

    /// The stable code.
    public let code: Code
    /// A human-readable reason, without secrets.
    public let reason: String

    /// Creates an error.
    public init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}
