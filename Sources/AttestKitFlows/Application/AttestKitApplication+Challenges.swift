import AttestKit
import AttestKitStore
public import AttestKitWire
import Foundation

extension AttestKitApplication {
    /// `POST /v1/challenges`: a one-time challenge for an attestation, or for an assertion, bound to a key when
    /// `keyId` is given, behind the budget of challenges per client address (`rate-limit.challenges-per-ip`) and,
    /// for an attestation, the attestation ramp (`ramp.*`, ``AttestationRamp``), which needs the key id
    /// the app generated and, when several apps are accepted, the app (`appId`).
    ///
    /// - Parameters:
    ///   - request: The request (`{}` when the body is empty).
    ///   - client: The client's address as a rate-limit key.
    /// - Throws: 429 `rate_limited`; 429 `attestation_deferred`; `invalid_field` (`purpose`, `keyId`, `appId`);
    ///   `apps_not_configured`; `storage_unavailable`.
    public func issueChallenge(_ request: ChallengeRequest, client: String) async throws(FlowError) -> ChallengeResponse
    {
        try await perform { () async throws(FlowError) in
            try limit(challengesPerClient, client, name: "challenges_per_ip")
            let purpose = try ChallengeIssuer.purpose(named: request.purpose)
            let keyID = try request.keyId.map { text throws(FlowError) in try Field.keyID(text) }
            // The app an attest challenge is admitted for binds it: its ceiling is the one spent, so the attestation
            // must be of that app.
            var appID: AppID?
            if purpose == .attest {
                appID = try admitToRamp(appId: request.appId, keyID: keyID)
            } else if request.appId != nil {
                throw FlowError.invalidField("appId", "names the app of attest challenges only")
            }
            let challenge = try await challenges.issue(purpose: purpose, keyID: keyID, appID: appID)
            if purpose == .attest {
                // The day's ceiling is spent once the challenge is stored, so that a challenge the store could not
                // keep costs none. One stored and then deferred is never answered (nobody learns its id): it expires.
                if let appID { try await spendRampCeiling(appID) }
                metrics.attestChallengeAdmitted()
            }
            return ChallengeResponse(
                challengeId: challenge.id.string, challenge: Data(challenge.bytes).base64EncodedString(),
                purpose: purpose.rawValue, expiresAt: APITime.format(challenge.expiresAt))
        }
    }

    /// Takes one request from a per-client limiter, or throws 429 (counted by the limit's name).
    func limit(_ limiter: RateLimiter, _ key: String, name: String) throws(FlowError) {
        if let wait = limiter.acquire(key, now: now()) { throw rateLimited(name, retryAfter: wait) }
    }

    /// Counts a refusal by the rate limit `name` and returns it.
    func rateLimited(_ name: String, retryAfter: Int) -> FlowError {
        metrics.rateLimited(name)
        return FlowError.rateLimited(name, retryAfter: retryAfter)
    }
}
