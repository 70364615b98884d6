public import Foundation

/// Where shared request budgets live, so that every replica sharing the store spends the same budget.
///
/// One of the small protocols ``AttestationStore`` composes.
public protocol RateBudgetStore: Sendable {
    /// Takes one request from `budget` at `now`, with one atomic statement, so that every replica sharing the
    /// database spends the same budget (the per-app attestation limit of the service).
    /// - Returns: `nil` when the request fits, otherwise the whole seconds until one would.
    func take(from budget: RateBudget, now: Date) async throws(StoreError) -> Int?
}
