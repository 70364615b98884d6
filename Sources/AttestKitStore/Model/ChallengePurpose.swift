/// What a challenge may be used for: one attestation, or one assertion.
///
/// A challenge issued for one purpose is refused for the other with
/// ``StoreError/Code/challengePurposeMismatch``, so an attestation challenge can never stand in for an
/// assertion's.
public struct ChallengePurpose: Sendable, Hashable, CustomStringConvertible {
    /// The stable name stored in the database: `attest` or `assert`.
    public let rawValue: String

    private init(unchecked rawValue: String) {
        self.rawValue = rawValue
    }

    /// The purpose with this stored name.
    /// - Throws: ``StoreError/Code/invalidInput`` for a name other than `attest` or `assert`.
    public init(rawValue: String) throws(StoreError) {
        guard let match = Self.allCases.first(where: { $0.rawValue == rawValue }) else {
            throw StoreError(.invalidInput, "a challenge purpose is attest or assert")
        }
        self = match
    }

    /// A challenge for `attestKey`: the server consumes it when the attestation arrives.
    public static let attest = ChallengePurpose(unchecked: "attest")
    /// A challenge for `generateAssertion`: the server consumes it with the assertion.
    public static let assert = ChallengePurpose(unchecked: "assert")

    /// Both purposes.
    public static let allCases: [ChallengePurpose] = [.attest, .assert]

    public var description: String { rawValue }
}
