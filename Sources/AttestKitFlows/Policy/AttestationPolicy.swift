public import AttestKit

/// A deployment rule an attestation must meet once Apple's checks passed: a validation category, a minimum OS
/// version, or a rule of the adopter's own.
///
/// Policies compose with ``AttestationPolicyBuilder`` and are checked in order; the first refusal wins and carries
/// its reason and code to the caller (``AttestationRegistrar`` throws it as a ``FlowError`` of kind `refused`).
///
/// ```swift
/// let policy = AttestationPolicyBuilder.build {
///     ValidationCategoryPolicy(allowed: [2])
///     MinimumOSVersionPolicy(OSVersion("17.4"))
/// }
/// ```
public protocol AttestationPolicy: Sendable {
    /// Whether `attestation` meets the rule, and why not when it does not.
    func check(_ attestation: VerifiedAttestation) -> PolicyResult
}

/// The outcome of one ``AttestationPolicy``: met, or failed with a reason (never a bare `false`).
public enum PolicyResult: Sendable, Hashable {
    /// The attestation meets the policy.
    case meetsPolicy
    /// The attestation fails the policy, for this reason.
    case failsToMeetPolicy(PolicyFailureReason)
}

/// Why an attestation fails a policy: the stable code the caller sees and a reason for people.
public struct PolicyFailureReason: Sendable, Hashable, CustomStringConvertible {
    /// The stable code (`policy_os_version`, `policy_validation_category`, or a code of the adopter's own).
    public let code: FlowError.Code
    /// What the rule wanted, for people. Never holds raw input beyond the values compared.
    public let reason: String

    /// Creates a reason.
    public init(_ code: FlowError.Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// `code: reason`.
    public var description: String { "\(code): \(reason)" }

    /// The refusal this reason becomes: kind `refused` (HTTP 403).
    public func error(file: String = #fileID, line: UInt = #line) -> FlowError {
        FlowError(code, .refused, reason, file: file, line: line)
    }
}

/// The policy that every attestation meets: what an empty builder block builds.
public struct AcceptAnyAttestation: AttestationPolicy {
    /// Creates the policy.
    public init() {}

    /// Always ``PolicyResult/meetsPolicy``.
    public func check(_: VerifiedAttestation) -> PolicyResult { .meetsPolicy }
}

/// An ``AttestationPolicy`` of any type, for storage where the concrete type does not matter.
struct AnyAttestationPolicy: AttestationPolicy {
    let wrapped: any AttestationPolicy

    init(_ wrapped: some AttestationPolicy) { self.wrapped = wrapped }

    func check(_ attestation: VerifiedAttestation) -> PolicyResult { wrapped.check(attestation) }
}
