import AttestKit
import AttestKitStore
import AttestKitWire
import Foundation
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/assertions/verify`.
    func verifyAssertion(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        var request = request
        let body = try await JSONRequest.decode(AssertionRequest.self, from: &request, limit: configuration.bodyLimit)
        let keyID = try Field.keyID(body.keyId)
        let assertion = try Field.bytes(body.assertion, "assertion", maximum: 4_096)
        let (clientData, freshness) = try Self.binding(of: body, limit: configuration.bodyLimit)
        let start = ContinuousClock.now
        do {
            let accepted = try await gate.verify(
                keyID: keyID, assertion: assertion, clientData: clientData, freshness: freshness)
            metrics.verification("assertion", code: nil, duration: ContinuousClock.now - start)
            return JSONResponse.make(
                .ok,
                AssertionResponse(
                    keyId: accepted.key.keyID.base64, counter: accepted.counter,
                    environment: accepted.key.environment.rawValue, riskMetric: accepted.key.riskMetric,
                    riskStatus: RiskPolicy.status(accepted.key.riskMetric),
                    stepUp: riskPolicy.requiresStepUp(accepted.key.riskMetric), freshness: freshness.name))
        } catch {
            let failure = APIError(any: error)
            metrics.verification("assertion", code: failure.code, duration: ContinuousClock.now - start)
            throw failure
        }
    }

    /// The client data to verify and the freshness to enforce, from raw `clientData` or from the request parts.
    static func binding(
        of body: AssertionRequest, limit: Int
    ) throws -> (ClientDataInput, AssertionGate.Freshness) {
        let challengeID = try body.challengeId.map { text in
            do {
                return try ChallengeID(string: text)
            } catch {
                throw APIError.invalidField("challengeId", "is not a challenge id of this service")
            }
        }
        switch (body.clientData, body.request) {
        case (let encoded?, nil):
            let clientData = try Field.bytes(encoded, "clientData", maximum: ClientDataInput.maximumLength)
            guard RequestBinding.claimsAttestKitFormat(clientData) else {
                // Not AttestKit's format: the caller's own scheme. Its freshness is the caller's, and the counter
                // still refuses replays; a challenge id given beside it is consumed.
                return (.clientData(clientData), challengeID.map { .challenge($0) } ?? .vouchedByCaller)
            }
            // It claims AttestKit's format, so it must be exactly that: a variant that does not round-trip is
            // refused, never taken as the caller's own scheme (which would skip the freshness check).
            guard let binding = try? RequestBinding(clientData: clientData) else {
                throw APIError(
                    .badRequest, "client_data_malformed",
                    "the client data starts like AttestKit's canonical client data but is not canonical")
            }
            let freshness = try AssertionGate.freshness(of: binding)
            if let challengeID, freshness != .challenge(challengeID) {
                throw APIError.invalidField("challengeId", "differs from the challenge the client data names")
            }
            return (.clientData(clientData), freshness)
        case (nil, let parts?):
            let freshness: RequestBinding.Freshness
            switch (challengeID, parts.timestamp) {
            case (let id?, nil): freshness = .challenge(id.string)
            case (nil, let milliseconds?): freshness = .timestamp(milliseconds: milliseconds)
            default: throw APIError.invalidField("challengeId", "give exactly one of challengeId and request.timestamp")
            }
            let binding: RequestBinding
            do {
                switch (parts.body, parts.bodySha256) {
                case (let body?, nil):
                    let bytes = body.isEmpty ? [] : try Field.bytes(body, "request.body", maximum: limit)
                    binding = try RequestBinding(
                        method: parts.method, target: parts.target, body: bytes, freshness: freshness)
                case (nil, let hex?):
                    guard hex.utf8.count == 64, let digest = Hex.decode(hex), digest.count == 32 else {
                        throw APIError.invalidField("request.bodySha256", "is 64 hexadecimal digits")
                    }
                    binding = try RequestBinding(
                        method: parts.method, target: parts.target, bodySHA256: digest, freshness: freshness)
                case (nil, nil):
                    binding = try RequestBinding(
                        method: parts.method, target: parts.target, body: [UInt8](), freshness: freshness)
                default:
                    throw APIError.invalidField("request.body", "give at most one of body and bodySha256")
                }
            } catch let error as RequestBindingError {
                throw APIError(error)
            }
            return (.clientData(binding.clientData), try AssertionGate.freshness(of: binding))
        default:
            throw APIError.invalidField("clientData", "give exactly one of clientData and request")
        }
    }
}
