/// Why an attestation fails an ``AttestationPolicy``: the stable code the caller sees and a reason for people.
///
/// Not to be confused with swift-certificates' type of the same name, which explains a refused certificate chain;
/// a file that imports both X509 and AttestKit names this one `AttestKit.PolicyFailureReason`.
public struct PolicyFailureReason: Sendable, Hashable, CustomStringConvertible {
    /// The stable code: ``AttestKitError/Code/policyOSVersion``, ``AttestKitError/Code/policyValidationCategory``,
    /// or a code of the adopter's own (``AttestKitError/Code/init(policy:)``).
    public let code: AttestKitError.Code
    /// What the rule wanted, for people. Never holds raw input beyond the values compared.
    public let reason: String

    /// Creates a reason.
    ///
    /// - Parameters:
    ///   - code: The stable code the refusal carries.
    ///   - reason: What the rule wanted, for people.
    public init(_ code: AttestKitError.Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// `code: reason`.
    public var description: String { "\(code): \(reason)" }

    /// The error this reason becomes when ``AttestationVerifier`` throws it.
    ///
    /// - Parameters:
    ///   - file: Where the error is raised.
    ///   - line: The line where the error is raised.
    /// - Returns: An ``AttestKitError`` with this code and reason.
    public func error(file: String = #fileID, line: UInt = #line) -> AttestKitError {
        AttestKitError(code, reason, file: file, line: line)
    }
}
