package import AttestKit
import Foundation

/// Runs conformance vectors through the AttestKit verifiers.
///
/// A vector with `verifyAt` is verified at that moment, chosen to fit its short-lived certificates and to follow its
/// receipt's signed creation time. The runner takes the library's own path: every check the public API makes,
/// the refusal of a receipt created after the verification time included, applies here too (a vector whose
/// `verifyAt` precedes its receipt is refused, as the library would refuse it).
package struct ConformanceRunner: Sendable {
    private let anchors: TrustAnchors

    /// Creates a runner trusting `anchors` (Apple's pinned roots unless a test CA is given).
    package init(anchors: TrustAnchors) {
        self.anchors = anchors
    }

    /// Evaluates one vector. Never throws: every failure becomes a `reject` outcome, a vector that cannot be read
    /// (a `verifyAt` that is not an ISO-8601 time) one with check `format`, before any verification.
    package func evaluate(_ vector: ConformanceVector) async -> ConformanceOutcome {
        // Verifying "now" instead would judge the object at a moment the vector never named.
        if vector.verifyAt != nil, vector.verificationTime == nil {
            return Self.malformed(vector.name, "verifyAt is not an ISO-8601 time")
        }
        do throws(AttestKitError) {
            switch vector.kind {
            case "attestation": return try await attestation(vector)
            case "assertion": return try assertion(vector)
            case "receipt": return try await receipt(vector)
            default:
                throw AttestKitError(.attestationMalformed, "unknown kind \(vector.kind)")
            }
        } catch {
            return ConformanceOutcome(
                name: vector.name, outcome: .reject, check: error.check.rawValue, code: error.code.rawValue,
                reason: error.reason)
        }
    }

    /// Evaluates one JSON line: a malformed line is a `reject` with check `format`.
    package func evaluate(line: some StringProtocol) async -> ConformanceOutcome {
        let vector: ConformanceVector
        do {
            vector = try JSONDecoder().decode(ConformanceVector.self, from: Data(line.utf8))
        } catch {
            return Self.malformed("", "the line is not a vector object")
        }
        return await evaluate(vector)
    }

    /// The outcome of a vector that cannot be read: a `reject` with check `format`, code `vector_malformed`.
    private static func malformed(_ name: String, _ reason: String) -> ConformanceOutcome {
        ConformanceOutcome(
            name: name, outcome: .reject, check: AttestKitError.Check.format.rawValue, code: "vector_malformed",
            reason: reason)
    }

    private func attestation(_ vector: ConformanceVector) async throws(AttestKitError) -> ConformanceOutcome {
        let parseOnly = vector.expect == "parse-only"
        // A parse-only vector's definition (Vectors/README.md) covers structure, chain, keyId, appId and
        // environment: neither the nonce nor the embedded receipt. Every other vector gets the default policy,
        // which requires the receipt.
        let configuration = try AttestationVerifier.Configuration(
            appIDs: [try appID(vector)], environments: try environments(vector),
            receiptPolicy: parseOnly ? .ignore : .require, trustAnchors: anchors)
        let verifier = AttestationVerifier(configuration: configuration)
            .appending(try (vector.policy ?? ConformancePolicy()).attestationPolicy())
        let keyID = try KeyID(string: vector.keyId ?? "")
        let clientData: ClientDataInput? =
            parseOnly ? nil : .clientDataHash(try bytes(vector.clientDataHash, .clientDataHashMalformed))
        let verified = try await verifier.verify(
            try bytes(vector.data, .attestationMalformed), keyID: keyID, nonceBinding: clientData,
            at: vector.verificationTime ?? Date())
        return ConformanceOutcome(
            name: vector.name, outcome: parseOnly ? .parseOnly : .valid, bundleVersion: verified.bundleVersion,
            validationCategory: verified.validationCategory)
    }

    private func assertion(_ vector: ConformanceVector) throws(AttestKitError) -> ConformanceOutcome {
        let clientData: ClientDataInput =
            if let data = vector.clientData {
                .clientData(try bytes(data, .clientDataHashMalformed))
            } else {
                .clientDataHash(try bytes(vector.clientDataHash, .clientDataHashMalformed))
            }
        guard let previous = vector.previousCounter.flatMap(UInt32.init(exactly:)) else {
            throw AttestKitError(.assertionMalformed, "previousCounter is missing or out of range")
        }
        let result = try AssertionVerifier().verify(
            try bytes(vector.data, .assertionMalformed),
            publicKeyX963: try bytes(vector.publicKey, .publicKeyMalformed),
            appID: try appID(vector), clientData: clientData, previousCounter: previous)
        // What the key's attestation reported (`registered`; none when the vector does not say): an assertion's
        // map is believed only for a key attested with one (docs/apple-formats.md §3a), for the policy and the
        // output alike.
        let key = RegisteredKey(
            bundleVersion: vector.registered?.bundleVersion, validationCategory: vector.registered?.validationCategory)
        let reported = result.reported(for: key)
        if let policy = vector.policy,
            case .failsToMeetPolicy(let reason) = try policy.assertionPolicy().check(reported, of: key)
        {
            throw reason.error()
        }
        return ConformanceOutcome(
            name: vector.name, outcome: .valid, counter: result.counter, bundleVersion: reported.bundleVersion,
            validationCategory: reported.validationCategory)
    }

    private func receipt(_ vector: ConformanceVector) async throws(AttestKitError) -> ConformanceOutcome {
        let environment = try environments(vector).allowed.count == 1 ? environments(vector).allowed.first : nil
        let receipt = try await ReceiptVerifier(anchor: anchors.receipt).verify(
            try bytes(vector.data, .receiptMalformed), appID: try appID(vector),
            keyID: try KeyID(string: vector.keyId ?? ""), attestedCertificateDER: nil, environment: environment,
            maximumAge: nil, at: vector.verificationTime ?? Date())
        return ConformanceOutcome(name: vector.name, outcome: .valid, fields: Self.summary(of: receipt))
    }

    /// The receipt's fields as text, for `--jsonl` output (the token and hashes are left out).
    static func summary(of receipt: Receipt) -> [String: String] {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var fields = [
            "type": receipt.type.rawValue, "appId": receipt.appID,
            "creationTime": formatter.string(from: receipt.creationTime),
        ]
        fields["environment"] = receipt.environment
        fields["riskMetric"] = receipt.riskMetric.map(String.init)
        fields["notBefore"] = receipt.notBefore.map(formatter.string(from:))
        fields["expirationTime"] = receipt.expirationTime.map(formatter.string(from:))
        return fields
    }

    private func appID(_ vector: ConformanceVector) throws(AttestKitError) -> AppID {
        try AppID(vector.appId ?? "")
    }

    private func environments(_ vector: ConformanceVector) throws(AttestKitError) -> EnvironmentPolicy {
        switch vector.environment {
        case "production": .production
        case "development": .development
        case nil, "": .both
        default: throw AttestKitError(.environmentMismatch, "unknown environment in the vector")
        }
    }

    private func bytes(_ text: String?, _ code: AttestKitError.Code) throws(AttestKitError) -> [UInt8] {
        guard let text, let decoded = Base64.decode(text) else {
            throw AttestKitError(code, "a field is missing or not Base64")
        }
        return decoded
    }
}
