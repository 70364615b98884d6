/// Why a request cannot be bound, or client data (of an assertion, ``RequestBinding``, or of a key attestation,
/// ``KeyAttestationClientData``) is not canonical.
public struct RequestBindingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The stable reason.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The stable snake_case string.
        public let rawValue: String
        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The method is not 1 to 16 letters.
        public static let invalidMethod = Code("invalid_method")
        /// The target does not start with `/`, is too long, or has a space, control character or `#`.
        public static let invalidTarget = Code("invalid_target")
        /// The body hash is not 32 bytes.
        public static let invalidBodyHash = Code("invalid_body_hash")
        /// The challenge id or timestamp is not in its allowed form.
        public static let invalidFreshness = Code("invalid_freshness")
        /// The app key of a key attestation is empty or longer than
        /// ``KeyAttestationClientData/maximumAppKeyLength``.
        public static let invalidAppKey = Code("invalid_app_key")
        /// Client data that is not exactly the canonical form.
        public static let malformed = Code("client_data_malformed")

        /// The stable string.
        public var description: String { rawValue }
    }

    /// The reason.
    public let code: Code

    /// Creates an error.
    public init(_ code: Code) { self.code = code }

    /// The code's string.
    public var description: String { code.rawValue }
}
