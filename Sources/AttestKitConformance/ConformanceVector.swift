package import Foundation

/// One conformance vector: the schema of the real-device vectors (`Tests/AttestKitTests/Vectors/README.md`).
///
/// Unknown keys are ignored; only `name`, `kind` and `data` are required. The expected outcome
/// (`expect`) is optional so that `attestkit verify --jsonl` can evaluate objects with no expectation.
package struct ConformanceVector: Decodable, Sendable {
    /// The vector's name.
    package var name: String
    /// `attestation`, `assertion` or `receipt`.
    package var kind: String
    /// `valid`, `parse-only` or `reject:<check>`.
    package var expect: String?
    /// The object, Base64 or base64url, padded or not.
    package var data: String
    /// `TEAMID.bundle.id`.
    package var appId: String?
    /// `production` or `development`: the environment the verifier requires.
    package var environment: String?
    /// ISO-8601 verification time.
    package var verifyAt: String?
    /// The key identifier the client claims (Base64).
    package var keyId: String?
    /// Attestations: the exact client data hash the app passed; assertions: SHA-256 of clientData.
    package var clientDataHash: String?
    /// Assertions: the signed client data (Base64).
    package var clientData: String?
    /// Assertions: the attested key, X9.63 (Base64).
    package var publicKey: String?
    /// Assertions: the stored counter.
    package var previousCounter: Int64?
    /// Assertions: the counter the assertion carries.
    package var expectedCounter: Int64?
    /// The deployment policy to judge the object under, after Apple's checks (the software Apple's policy vectors);
    /// absent for Apple's checks alone.
    package var policy: ConformancePolicy?
    /// Assertions: what the key's attestation reported at registration, which the policy compares with and without
    /// which an assertion's iOS 27 extension map is not reported (absent: the attestation reported none).
    package var registered: Registration?

    /// What a key's attestation reported, for an assertion policy.
    package struct Registration: Decodable, Sendable {
        /// The iOS 27 bundle version.
        package var bundleVersion: String?
        /// The iOS 27 validation category.
        package var validationCategory: UInt32?
    }

    /// Parses `verifyAt`, accepting fractional seconds: `nil` when it is absent or is not an ISO-8601 time (which
    /// ``ConformanceRunner/evaluate(_:)`` refuses as a `format` reject rather than verifying now).
    package var verificationTime: Date? {
        guard let verifyAt else { return nil }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: verifyAt) ?? ISO8601DateFormatter().date(from: verifyAt)
    }
}
