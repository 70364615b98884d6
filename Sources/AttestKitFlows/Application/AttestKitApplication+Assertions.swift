public import AttestKitWire
import AttestKit
import AttestKitStore
import Foundation

extension AttestKitApplication {
    /// `POST /v1/assertions/verify`: verifies an assertion a backend received, advancing the key's counter once.
    ///
    /// - Returns: The counter, the key, the freshness used and whether to step up (200).
    /// - Throws: `invalid_field` and the binding's codes (400); the gate's (``AssertionGate``).
    public func verifyAssertion(_ request: AssertionRequest) async throws(FlowError) -> AssertionResponse {
        try await perform { () async throws(FlowError) in
            let keyID = try Field.keyID(request.keyId)
            let assertion = try Field.bytes(request.assertion, "assertion", maximum: Field.maximumAssertionLength)
            let binding = try Self.binding(of: request, limit: configuration.bodyLimit)
            let start = ContinuousClock.now
            do throws(FlowError) {
                let accepted = try await gate.verify(keyID: keyID, assertion: assertion, binding: binding)
                metrics.verification("assertion", code: nil, duration: ContinuousClock.now - start)
                if accepted.validationCategoryChanged { metrics.validationCategoryChangeStepUp("assertion") }
                return AssertionResponse(
                    accepted, freshness: binding.freshness, policy: configuration.policy.riskPolicy)
            } catch {
                metrics.verification("assertion", code: error.code.rawValue, duration: ContinuousClock.now - start)
                throw error
            }
        }
    }

    /// The client data to verify and the freshness to enforce, from raw `clientData` or from the request parts
    /// (``AssertionBinding`` decides; this only picks the JSON fields).
    static func binding(of body: AssertionRequest, limit: Int) throws(FlowError) -> AssertionBinding {
        let challengeID = try body.challengeId.map { text throws(FlowError) in try Field.challengeID(text) }
        switch (body.clientData, body.request) {
        case (let encoded?, nil):
            let clientData = try Field.bytes(encoded, "clientData", maximum: ClientDataInput.maximumLength)
            return try AssertionBinding(clientData: clientData, challengeID: challengeID)
        case (nil, let parts?):
            let freshness: Freshness
            switch (challengeID, parts.timestamp) {
            case (let id?, nil): freshness = .challenge(id.string)
            case (nil, let milliseconds?): freshness = .timestamp(milliseconds: milliseconds)
            default:
                throw FlowError.invalidField("challengeId", "give exactly one of challengeId and request.timestamp")
            }
            switch try RequestBody(body: parts.body, sha256: parts.bodySha256, in: "request.", limit: limit) {
            case .bytes(let bytes):
                return try AssertionBinding(
                    method: parts.method, target: parts.target, body: bytes, freshness: freshness)
            case .sha256(let digest):
                return try AssertionBinding(
                    method: parts.method, target: parts.target, bodySHA256: digest, freshness: freshness)
            }
        default:
            throw FlowError.invalidField("clientData", "give exactly one of clientData and request")
        }
    }
}

/// The body of a request a backend describes: its bytes (Base64 in the JSON), or its SHA-256 (64 hexadecimal
/// digits); neither is the empty body.
enum RequestBody: Sendable {
    /// The exact bytes.
    case bytes([UInt8])
    /// SHA-256 of the exact bytes.
    case sha256([UInt8])

    /// Reads `body` (Base64, at most `limit` bytes) or `sha256`; `prefix` prefixes the field names of errors.
    init(body: String?, sha256: String?, in prefix: String = "", limit: Int) throws(FlowError) {
        switch (body, sha256) {
        case (let body?, nil):
            let bytes = body.isEmpty ? [] : try Field.bytes(body, "\(prefix)body", maximum: limit)
            // Field.bytes bounds the text, which lets a few bytes more than `limit` through: the limit is exact here,
            // as where a middleware collects the body.
            guard bytes.count <= limit else {
                throw FlowError.invalidField("\(prefix)body", "is longer than \(limit) bytes")
            }
            self = .bytes(bytes)
        case (nil, let hex?):
            guard hex.utf8.count == 64, let digest = Hex.decode(hex), digest.count == 32 else {
                throw FlowError.invalidField("\(prefix)bodySha256", "is 64 hexadecimal digits")
            }
            self = .sha256(digest)
        case (nil, nil):
            self = .bytes([])
        default:
            throw FlowError.invalidField("\(prefix)body", "give at most one of body and bodySha256")
        }
    }
}
