import AttestKitStore
import Foundation
import Hummingbird

extension AttestKitAPI {
    /// `POST /v1/challenges`.
    func issueChallenge(_ request: Request, _ context: ServerRequestContext) async throws -> Response {
        var request = request
        try limit(challengesPerIP, clientKey(request, context), name: "challenges_per_ip")
        let body = try await JSONRequest.decode(
            ChallengeRequest.self, from: &request, limit: configuration.bodyLimit, emptyAsObject: true)
        let purpose: ChallengePurpose
        switch body.purpose ?? "attest" {
        case "attest": purpose = .attest
        case "assert": purpose = .assert
        default: throw APIError.invalidField("purpose", "is attest or assert")
        }
        let keyID = try body.keyId.map(Field.keyID)
        if keyID != nil && purpose == .attest {
            throw APIError.invalidField("keyId", "binds assert challenges only")
        }
        let challenge = try await store.issueChallenge(
            purpose: purpose, keyID: keyID, ttl: configuration.challengeTTL, now: now())
        return JSONResponse.make(
            .created,
            ChallengeResponse(
                challengeId: challenge.id.string, challenge: Data(challenge.bytes).base64EncodedString(),
                purpose: purpose.rawValue, expiresAt: APITime.format(challenge.expiresAt)))
    }
}
