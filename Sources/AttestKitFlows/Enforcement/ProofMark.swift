/// The mark of the guards of one ``AssertionGate`` on the decisions they proved: what lets a nested guard take an
/// outer guard's proof as its own (``RouteGuard/check(after:lookup:subject:)``). Only the flows make one, so a
/// decision an application built itself (``RequestAttestation``'s public initializer) or one proved against another
/// gate (another store, other apps) never carries it, and is verified again in full.
package final class ProofMark: Sendable {
    package init() {}
}
