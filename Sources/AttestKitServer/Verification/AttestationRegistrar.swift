import AttestKit
import AttestKitStore
import Foundation
import HTTPTypes

/// Verifies an attestation against a one-time challenge, applies the deployment's policy and registers the key.
struct AttestationRegistrar: Sendable {
    let verifier: AttestationVerifier?
    let store: any AttestationStore
    let policy: ServerConfiguration.Policy

    /// Consumes the challenge, refuses a known key, verifies, checks policy, lets `admit` refuse (rate limits
    /// of the verified app), and registers.
    func register(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, now: Date, admit: (AppID) async throws -> Void
    ) async throws -> KeyRecord {
        guard let verifier else {
            throw APIError(
                .serviceUnavailable, "apps_not_configured",
                "no app is configured (apps: TEAMID.bundle.id); attestations cannot be accepted")
        }
        let challenge = try await store.consumeChallenge(challengeID, purpose: .attest, keyID: nil, now: now)
        if try await store.key(keyID) != nil { throw StoreError.keyExists }
        let verified = try await verifier.verify(
            attestation, keyID: keyID, clientData: .challenge(challenge.bytes), at: now)
        try check(verified)
        try await admit(verified.appID)
        return try await store.registerKey(KeyRegistration(verified), now: now)
    }

    private func check(_ attestation: VerifiedAttestation) throws {
        if let allowed = policy.allowedValidationCategories {
            guard let category = attestation.validationCategory, allowed.contains(category) else {
                let shown = attestation.validationCategory.map(String.init) ?? "none"
                throw APIError(
                    .forbidden, "policy_validation_category",
                    "the validation category \(shown) is not allowed by this deployment")
            }
        }
        if let minimum = policy.minimumOSVersion.flatMap({ OSVersion($0) }) {
            guard let text = attestation.osVersion, let version = OSVersion(text), version >= minimum else {
                throw APIError(
                    .forbidden, "policy_os_version",
                    "the OS version \(attestation.osVersion ?? "unknown") is below the minimum \(minimum)")
            }
        }
    }
}
