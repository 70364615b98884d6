public import AttestKit
public import AttestKitStore
public import Foundation

/// Registers an app's key: consumes the one-time challenge, refuses a known key, verifies the attestation
/// (AttestKit's `AttestationVerifier`), checks the deployment's ``AttestationPolicy``, lets the caller's `admit`
/// hook refuse the verified app (a per-app budget), and stores the key.
///
/// ```swift
/// let registrar = AttestationRegistrar(verifier: verifier, store: store, policy: deployment.attestationPolicy)
/// let record = try await registrar.register(
///     keyID: keyID, attestation: bytes, challengeID: challengeID, now: Date())
/// ```
public struct AttestationRegistrar: Sendable {
    /// The verifier of the deployment's apps, or `nil` when no app is configured (every attestation is then
    /// refused with `apps_not_configured`).
    public let verifier: AttestationVerifier?
    /// The state.
    public let store: any AttestationStore
    /// The deployment's rules beyond Apple's checks.
    public let policy: any AttestationPolicy

    /// Creates a registrar.
    public init(verifier: AttestationVerifier?, store: any AttestationStore, policy: some AttestationPolicy) {
        self.verifier = verifier
        self.store = store
        self.policy = policy
    }

    /// Creates a registrar whose policy is built with ``AttestationPolicyBuilder``.
    public init(
        verifier: AttestationVerifier?, store: any AttestationStore,
        @AttestationPolicyBuilder policy: () -> some AttestationPolicy
    ) {
        self.init(verifier: verifier, store: store, policy: policy())
    }

    /// Verifies `attestation` for `keyID` against the challenge `challengeID` and registers the key.
    ///
    /// - Parameters:
    ///   - keyID: The key identifier the app sent.
    ///   - attestation: The attestation object, as `attestKey` returned it.
    ///   - challengeID: The challenge the attestation's client data hashes.
    ///   - now: The time of the request.
    ///   - admit: Called with the verified app before the key is stored; throw to refuse (for example a spent
    ///     per-app budget). Counted on verified attestations only, so forged objects naming an app cannot spend
    ///     its budget.
    /// - Returns: The stored key.
    /// - Throws: ``FlowError``: `apps_not_configured`; the challenge's and the store's codes (`challenge_*`,
    ///   `key_exists`, `storage_unavailable`); AttestKit's verification codes; `policy_*` from the policy; whatever
    ///   `admit` throws.
    public func register(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, now: Date,
        admit: (AppID) async throws(FlowError) -> Void = { _ in }
    ) async throws(FlowError) -> KeyRecord {
        guard let verifier else { throw FlowError.appsNotConfigured }
        let challenge: StoredChallenge
        do throws(StoreError) {
            challenge = try await store.consumeChallenge(challengeID, purpose: .attest, keyID: nil, now: now)
            if try await store.key(keyID) != nil { throw StoreError.keyExists }
        } catch {
            throw FlowError(error)
        }
        let verified: VerifiedAttestation
        do throws(AttestKitError) {
            verified = try await verifier.verify(
                attestation, keyID: keyID, clientData: .challenge(challenge.bytes), at: now)
        } catch {
            throw FlowError(error)
        }
        if case .failsToMeetPolicy(let reason) = policy.check(verified) { throw reason.error() }
        try await admit(verified.appID)
        do throws(StoreError) {
            return try await store.registerKey(KeyRegistration(verified), now: now)
        } catch {
            throw FlowError(error)
        }
    }
}
