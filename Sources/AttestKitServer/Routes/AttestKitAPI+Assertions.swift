import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Foundation
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/assertions/verify`.
    func verifyAssertion(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(AssertionRequest.self, from: &request, limit: configuration.bodyLimit)
        let keyID = try Field.keyID(body.keyId)
        let assertion = try Field.bytes(body.assertion, "assertion", maximum: Field.maximumAssertionLength)
        let binding = try Self.binding(of: body, limit: configuration.bodyLimit)
        let start = ContinuousClock.now
        do {
            let accepted = try await gate.verify(keyID: keyID, assertion: assertion, binding: binding)
            metrics.flows.verification("assertion", code: nil, duration: ContinuousClock.now - start)
            return JSONResponse.make(
                .ok,
                AssertionResponse(accepted, freshness: binding.freshness, policy: configuration.policy.riskPolicy))
        } catch {
            metrics.flows.verification(
                "assertion", code: APIError(any: error).code, duration: ContinuousClock.now - start)
            // Thrown as it is: the route's one mapping (`AttestKitAPI.answer`) still sees a storage failure under it.
            throw error
        }
    }

    /// The client data to verify and the freshness to enforce, from raw `clientData` or from the request parts
    /// (the flows' `AssertionBinding` decides; this only picks the JSON fields).
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
            switch (parts.body, parts.bodySha256) {
            case (let body?, nil):
                let bytes = body.isEmpty ? [] : try Field.bytes(body, "request.body", maximum: limit)
                return try AssertionBinding(
                    method: parts.method, target: parts.target, body: bytes, freshness: freshness)
            case (nil, let hex?):
                guard hex.utf8.count == 64, let digest = Hex.decode(hex), digest.count == 32 else {
                    throw FlowError.invalidField("request.bodySha256", "is 64 hexadecimal digits")
                }
                return try AssertionBinding(
                    method: parts.method, target: parts.target, bodySHA256: digest, freshness: freshness)
            case (nil, nil):
                return try AssertionBinding(
                    method: parts.method, target: parts.target, body: [UInt8](), freshness: freshness)
            default:
                throw FlowError.invalidField("request.body", "give at most one of body and bodySha256")
            }
        default:
            throw FlowError.invalidField("clientData", "give exactly one of clientData and request")
        }
    }
}
