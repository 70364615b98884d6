/// A result builder that composes ``AttestationPolicy`` values, in the style of swift-certificates'
/// `PolicyBuilder`: the policies are checked in the order written, and the first failure (with its reason) is the
/// result. `if`, `if`/`else` and `if let` work as expected.
///
/// ```swift
/// @AttestationPolicyBuilder var policy: some AttestationPolicy {
///     if let categories { ValidationCategoryPolicy(allowed: categories) }
///     MinimumOSVersionPolicy(minimum)
/// }
/// ```
@resultBuilder
public struct AttestationPolicyBuilder: Sendable {
    /// Builds one policy from a builder closure.
    ///
    /// - Parameter body: The policies, in the order they are checked.
    /// - Returns: The composed policy.
    public static func build(@AttestationPolicyBuilder _ body: () -> some AttestationPolicy) -> some AttestationPolicy {
        body()
    }

    /// An empty block: every attestation meets it.
    public static func buildBlock() -> AcceptAnyAttestation { AcceptAnyAttestation() }

    /// The first policy of a block.
    public static func buildPartialBlock<Policy: AttestationPolicy>(first: Policy) -> Policy { first }

    /// The policies so far, then `next`.
    public static func buildPartialBlock(
        accumulated: some AttestationPolicy, next: some AttestationPolicy
    ) -> some AttestationPolicy {
        Sequence2(first: accumulated, second: next)
    }

    /// A policy under `if` without `else`: met when absent.
    public static func buildOptional(_ component: (some AttestationPolicy)?) -> some AttestationPolicy {
        OptionalPolicy(wrapped: component)
    }

    /// The first branch of `if`/`else`.
    public static func buildEither<First: AttestationPolicy, Second: AttestationPolicy>(
        first component: First
    ) -> _Either<First, Second> {
        _Either(storage: .first(component))
    }

    /// The second branch of `if`/`else`.
    public static func buildEither<First: AttestationPolicy, Second: AttestationPolicy>(
        second component: Second
    ) -> _Either<First, Second> {
        _Either(storage: .second(component))
    }

    /// A policy under `#available`.
    public static func buildLimitedAvailability(_ component: some AttestationPolicy) -> some AttestationPolicy {
        component
    }
}

extension AttestationPolicyBuilder {
    /// Two policies, the first checked first.
    struct Sequence2<First: AttestationPolicy, Second: AttestationPolicy>: AttestationPolicy {
        let first: First
        let second: Second

        func check(_ attestation: VerifiedAttestation) -> PolicyResult {
            switch first.check(attestation) {
            case .meetsPolicy: second.check(attestation)
            case .failsToMeetPolicy(let reason): .failsToMeetPolicy(reason)
            }
        }
    }

    /// A policy that may be absent.
    struct OptionalPolicy<Wrapped: AttestationPolicy>: AttestationPolicy {
        let wrapped: Wrapped?

        func check(_ attestation: VerifiedAttestation) -> PolicyResult {
            wrapped?.check(attestation) ?? .meetsPolicy
        }
    }

    /// One of two policies: the branches of `if`/`else`. Public (as in swift-certificates) so that the compiler
    /// can infer both branches' types; build it with the builder only.
    public struct _Either<First: AttestationPolicy, Second: AttestationPolicy>: AttestationPolicy {
        enum Storage: Sendable {
            case first(First)
            case second(Second)
        }

        let storage: Storage

        /// The chosen branch's result.
        public func check(_ attestation: VerifiedAttestation) -> PolicyResult {
            switch storage {
            case .first(let policy): policy.check(attestation)
            case .second(let policy): policy.check(attestation)
            }
        }
    }
}
