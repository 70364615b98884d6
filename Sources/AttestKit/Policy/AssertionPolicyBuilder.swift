/// A result builder that composes ``AssertionPolicy`` values like ``AttestationPolicyBuilder`` composes attestation
/// policies: checked in the order written, the first failure (with its reason) is the result; `if` and `if let`
/// work as expected.
@resultBuilder
public struct AssertionPolicyBuilder: Sendable {
    /// An empty block: every assertion meets it.
    public static func buildBlock() -> AcceptAnyAssertion { AcceptAnyAssertion() }

    /// The first policy of a block.
    public static func buildPartialBlock<Policy: AssertionPolicy>(first: Policy) -> Policy { first }

    /// The policies so far, then `next`.
    public static func buildPartialBlock(
        accumulated: some AssertionPolicy, next: some AssertionPolicy
    ) -> some AssertionPolicy {
        Sequence2(first: accumulated, second: next)
    }

    /// A policy under `if` without `else`: met when absent.
    public static func buildOptional(_ component: (some AssertionPolicy)?) -> some AssertionPolicy {
        OptionalPolicy(wrapped: component)
    }
}

extension AssertionPolicyBuilder {
    /// Two policies, the first checked first.
    struct Sequence2<First: AssertionPolicy, Second: AssertionPolicy>: AssertionPolicy {
        let first: First
        let second: Second

        func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult {
            switch first.check(assertion, of: key) {
            case .meetsPolicy: second.check(assertion, of: key)
            case .failsToMeetPolicy(let reason): .failsToMeetPolicy(reason)
            }
        }
    }

    /// A policy that may be absent.
    struct OptionalPolicy<Wrapped: AssertionPolicy>: AssertionPolicy {
        let wrapped: Wrapped?

        func check(_ assertion: VerifiedAssertion, of key: RegisteredKey) -> PolicyResult {
            wrapped?.check(assertion, of: key) ?? .meetsPolicy
        }
    }
}
