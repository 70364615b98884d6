public import AttestKit

/// An error of the software Apple or a simulated device: the simulator refused a request, as Apple's
/// `DCAppAttestService` or Apple's receipt server would, or a state file could not be used.
///
/// These are errors of the *simulator*, not verification failures: a verifier rejecting a simulated object throws
/// `AttestKitError` as usual. Never contains key material.
public struct SoftwareAppleError: CodedError, Sendable {
    /// What went wrong.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The stable snake_case name.
        public let rawValue: String

        /// Creates a code from its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// As `DCError.invalidKey`: the key is unknown, already attested (attestation), or not attested yet
        /// (assertion).
        public static let invalidKey = Code(rawValue: "invalid_key")
        /// As `DCError.invalidInput`: an empty client data hash, or a fault that does not apply to this object.
        public static let invalidInput = Code(rawValue: "invalid_input")
        /// The receipt was not signed by this software Apple, so it cannot be refreshed.
        public static let receiptNotRecognized = Code(rawValue: "receipt_not_recognized")
        /// HTTP 304 of Apple's receipt exchange: the receipt's Not Before has not passed yet.
        public static let notModified = Code(rawValue: "not_modified")
        /// A state file is unreadable, of another format, or inconsistent.
        public static let invalidState = Code(rawValue: "invalid_state")
        /// Building a certificate or signing failed.
        public static let signingFailed = Code(rawValue: "signing_failed")

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
