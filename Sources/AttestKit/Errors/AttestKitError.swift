import Foundation

/// An error raised while parsing or verifying an App Attest object.
///
/// Every failure carries a stable ``Code`` (a short snake_case string that never changes between
/// releases, suitable for HTTP responses and metric labels), the ``Check`` it belongs to, a human
/// readable reason, and for time checks the number of seconds by which the check missed.
///
/// Errors compare equal when their codes are equal, so tests and callers can write
/// `#expect(throws: AttestKitError.nonceMismatch)` or `catch let error where error.code == .nonceMismatch`.
/// The description never contains keys, tokens or attestation bytes.
public struct AttestKitError: CodedError, Sendable {
    /// The stable, machine-readable identity of a failure.
    public let code: Code
    /// A human-readable explanation. Never contains secrets or raw input.
    public let reason: String
    /// For time checks: by how many seconds the time was outside the allowed window
    /// (always positive). `nil` for every other failure.
    public let secondsOutside: Double?
    /// Source location where the error was raised, for debugging.
    public let file: String
    /// Source line where the error was raised, for debugging.
    public let line: UInt

    /// The category of check that failed.
    public var check: Check { code.check }

    /// Creates an error with a code and a reason.
    public init(
        _ code: Code,
        _ reason: String,
        secondsOutside: Double? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) {
        self.code = code
        self.reason = reason
        self.secondsOutside = secondsOutside
        self.file = file
        self.line = line
    }
}

extension AttestKitError {
    /// Seconds as time-check reasons show them: whole seconds from 10 up, milliseconds below; any value, infinite,
    /// NaN or beyond `Int`, is shown rather than trapping.
    static func formatted(seconds value: Double) -> String {
        guard value >= 10 else { return String(format: "%.3f", value) }
        guard value < 1e15 else { return value.isFinite ? String(format: "%.0f", value) : "\(value)" }
        return String(Int(value.rounded(.up)))
    }
}

extension AttestKitError {
    /// The category of a failure: which of the verifier's checks rejected the input.
    public struct Check: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The stable string name of the check, as used by the conformance vectors and the HTTP API.
        public let rawValue: String

        /// Creates a check from its name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The certificate chain (trust, validity window, structure).
        public static let certificate = Check(rawValue: "certificate")
        /// The nonce binding the attestation to the challenge.
        public static let nonce = Check(rawValue: "nonce")
        /// The key identifier or credential id.
        public static let keyId = Check(rawValue: "keyId")
        /// The App ID (rpIdHash, receipt App ID).
        public static let appId = Check(rawValue: "appId")
        /// The App Attest environment (AAGUID).
        public static let environment = Check(rawValue: "environment")
        /// The signature counter.
        public static let counter = Check(rawValue: "counter")
        /// An assertion's signature.
        public static let signature = Check(rawValue: "signature")
        /// The App Attest receipt (CMS container, signer chain, fields).
        public static let receipt = Check(rawValue: "receipt")
        /// Malformed or out-of-bounds input.
        public static let format = Check(rawValue: "format")
        /// A deployment's ``AttestationPolicy`` refused an attestation that passed Apple's checks.
        public static let policy = Check(rawValue: "policy")

        /// The check's name.
        public var description: String { rawValue }
    }
}
