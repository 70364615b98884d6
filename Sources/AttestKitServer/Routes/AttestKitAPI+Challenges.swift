import AttestKitFlows
import AttestKitWire
import AttestKitStore
import Foundation
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/challenges`: the flows' `ChallengeIssuer` behind the per-IP limit.
    func issueChallenge(_ request: Request, _ context: RouteContext) async throws -> Response {
        var request = request
        try limit(challengesPerIP, clientKey(request, context), name: "challenges_per_ip")
        let body = try await JSONRequest.decode(
            ChallengeRequest.self, from: &request, limit: configuration.bodyLimit, emptyAsObject: true)
        let purpose = try ChallengeIssuer.purpose(named: body.purpose)
        let keyID = try body.keyId.map { text throws(FlowError) in try Field.keyID(text) }
        let challenge = try await challenges.issue(purpose: purpose, keyID: keyID)
        return JSONResponse.make(
            .created,
            ChallengeResponse(
                challengeId: challenge.id.string, challenge: Data(challenge.bytes).base64EncodedString(),
                purpose: purpose.rawValue, expiresAt: APITime.format(challenge.expiresAt)))
    }
}
