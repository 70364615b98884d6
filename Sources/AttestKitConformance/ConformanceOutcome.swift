/// What the verifier concluded about one vector, in the shape `attestkit verify --jsonl` prints.
package struct ConformanceOutcome: Encodable, Sendable, Equatable {
    /// `valid`, `reject` or `parse-only`.
    package enum Kind: String, Encodable, Sendable { case valid, reject, parseOnly = "parse-only" }

    /// The vector's name (empty when the input line was not a vector).
    package var name: String
    /// The outcome.
    package var outcome: Kind
    /// For rejects: the failed check (`certificate`, `nonce`, ..., `format`).
    package var check: String?
    /// For rejects: the stable error code.
    package var code: String?
    /// For assertions: the verified counter.
    package var counter: UInt32?
    /// For receipts: the parsed fields.
    package var fields: [String: String]?
    /// Attestations and assertions: the iOS 27 bundle version the object reports (an assertion's only when the key's
    /// attestation, the vector's `registered`, reported a map: `VerifiedAssertion.reported(for:)`).
    package var bundleVersion: String?
    /// Attestations and assertions: the iOS 27 validation category the object reports (an assertion's as
    /// ``bundleVersion``).
    package var validationCategory: UInt32?
    /// A human-readable reason for rejects (not part of the stable contract).
    package var reason: String?

    /// Creates an outcome.
    package init(
        name: String, outcome: Kind, check: String? = nil, code: String? = nil, counter: UInt32? = nil,
        fields: [String: String]? = nil, reason: String? = nil, bundleVersion: String? = nil,
        validationCategory: UInt32? = nil
    ) {
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
        self.name = name
        self.outcome = outcome
        self.check = check
        self.code = code
        self.counter = counter
        self.fields = fields
        self.reason = reason
    }

    /// The outcome in the `expect` notation: `valid`, `parse-only` or `reject:<check>`.
    package var expectation: String {
        switch outcome {
        case .valid: "valid"
        case .parseOnly: "parse-only"
        case .reject: "reject:\(check ?? "")"
        }
    }

    private enum CodingKeys: String, CodingKey {
        case name, outcome, check, code, counter, fields, bundleVersion, validationCategory
    }
}
