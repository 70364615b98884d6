public import AttestKit
public import AttestKitStore
import AttestKitWire
public import Foundation

/// Registers an app's key: consumes the one-time challenge, verifies the attestation (AttestKit's
/// `AttestationVerifier`, whose policy holds the deployment's rules: ``DeploymentPolicy/attestationPolicy`` and any of
/// the adopter's own, checked in the same call as Apple's), only then refuses a known key, lets the caller's `admit`
/// hook refuse the verified app (a per-app budget), and stores the key. A refusal by `admit`, or the store
/// unavailable after the challenge was consumed, gives the challenge back (`ChallengeStore.releaseChallenge(_:)`): it
/// says "not now", not "not this attestation", so the same attestation may be posted again once the wait is over.
///
/// Verify first, then tell: whether a key id is registered (`key_exists`) and which app key is bound to it
/// (`app_key_mismatch`) is answered only to an attestation that verified for that key id, which only the device
/// holding the key can make. Anything else gets its verification error, so the route is no oracle of registered keys.
///
/// ```swift
/// let verifier = AttestationVerifier(configuration: configuration, policy: deployment.attestationPolicy)
/// let registrar = AttestationRegistrar(verifier: verifier, store: store)
/// let record = try await registrar.register(
///     keyID: keyID, attestation: bytes, challengeID: challengeID, now: Date())
/// ```
public struct AttestationRegistrar: Sendable {
    /// What a registration stored, and the verified attestation it stored it from (what the attestation certified
    /// beyond the stored record, such as the key's access control, which the store does not keep).
    public struct Registered: Sendable {
        /// The stored key.
        public let record: KeyRecord
        /// The verified attestation.
        public let attestation: VerifiedAttestation
        /// The app's own bytes of the attestation's client data (what followed the challenge,
        /// `AttestationClientData.appData`), or `nil` when the client data was the challenge alone.
        public var appData: [UInt8]? = nil
    }

    /// The verifier of the deployment's apps, with the deployment's policy (its `policy`), or `nil` when no app is
    /// configured (every attestation is then refused with `apps_not_configured`).
    public let verifier: AttestationVerifier?
    /// The state.
    public let store: any AttestationStore
    /// Writes a bundle for every failed verification (opt-in), or `nil`.
    public let recorder: VerificationRecorder?

    /// Creates a registrar.
    ///
    /// - Parameters:
    ///   - verifier: The verifier of the deployment's apps, its policy included; `nil` refuses every attestation.
    ///   - store: The state.
    ///   - recorder: Writes a bundle for every failed verification (opt-in).
    public init(verifier: AttestationVerifier?, store: any AttestationStore, recorder: VerificationRecorder? = nil) {
        self.verifier = verifier
        self.store = store
        self.recorder = recorder
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
    ///     its budget. Its refusal leaves the challenge unconsumed, for a later post of the same attestation, as
    ///     does `storage_unavailable` after the challenge was consumed (given back, best effort).
    /// - Returns: The stored key.
    /// - Throws: ``FlowError``: `apps_not_configured`; the challenge's codes (`challenge_*`); AttestKit's
    ///   verification codes, `policy_*` (or an adopter's own code) from the verifier's policy, refused; after a
    ///   verified attestation only, `challenge_app_mismatch` (403, the challenge was issued for another app),
    ///   `key_exists` and `storage_unavailable`; whatever `admit` throws.
    public func register(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, now: Date,
        admit: (AppID) async throws(FlowError) -> Void = { _ in }
    ) async throws(FlowError) -> KeyRecord {
        try await registerVerified(
            keyID: keyID, attestation: attestation, challengeID: challengeID, now: now, admit: admit
        ).record
    }

    /// ``register(keyID:attestation:challengeID:now:admit:)``, answering the verified attestation with the stored
    /// key.
    ///
    /// - Returns: The stored key and the verified attestation.
    /// - Throws: As ``register(keyID:attestation:challengeID:now:admit:)``.
    public func registerVerified(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, now: Date,
        admit: (AppID) async throws(FlowError) -> Void = { _ in }
    ) async throws(FlowError) -> Registered {
        try await register(
            keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: nil, now: now, admit: admit)
    }

    /// ``registerVerified(keyID:attestation:challengeID:now:admit:)`` for an attestation whose client data is
    /// `clientData`, the exact bytes the app hashed for `attestKey`: the challenge's bytes as issued followed by the
    /// app's own (`AttestationClientData`). Once the challenge is consumed, the first bytes of `clientData` must be
    /// its bytes (compared in constant time) and at least one byte must follow; the attestation is then verified with
    /// SHA-256 of `clientData`, and the app's bytes are answered as ``Registered/appData``.
    ///
    /// - Parameters:
    ///   - keyID: The key identifier the app sent.
    ///   - attestation: The attestation object, as `attestKey` returned it.
    ///   - challengeID: The challenge `clientData` begins with.
    ///   - clientData: The client data as the app sent it; `nil` is the challenge alone (as without the parameter).
    ///   - now: The time of the request.
    ///   - admit: Called with the verified app before the key is stored; throw to refuse (a spent per-app budget),
    ///     as for ``registerVerified(keyID:attestation:challengeID:now:admit:)``.
    /// - Returns: The stored key, the verified attestation and the app's bytes.
    /// - Throws: As ``register(keyID:attestation:challengeID:now:admit:)``; `invalid_field` (400, `clientData`) for
    ///   client data longer than `AttestationClientData.maximumLength` or too short to hold a challenge and a byte,
    ///   before the challenge is consumed; `client_data_challenge_mismatch` (403) when, once the challenge is
    ///   consumed, the client data does not begin with its bytes or holds nothing after them; `nonce_mismatch` for
    ///   an attestation made over other client data.
    public func registerVerified(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, clientData: [UInt8]?, now: Date,
        admit: (AppID) async throws(FlowError) -> Void = { _ in }
    ) async throws(FlowError) -> Registered {
        if let clientData { try Self.checkShape(clientData) }
        return try await register(
            keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: nil, clientData: clientData,
            now: now, admit: admit)
    }

    /// Refuses client data that cannot be a challenge followed by app bytes, whatever the challenge: too short or
    /// too long.
    /// - Throws: `invalid_field` (`clientData`).
    static func checkShape(_ clientData: [UInt8]) throws(FlowError) {
        guard clientData.count <= AttestationClientData.maximumLength else {
            throw FlowError.invalidField("clientData", "is longer than \(AttestationClientData.maximumLength) bytes")
        }
        guard clientData.count > AttestationClientData.minimumChallengeLength else {
            throw FlowError.invalidField(
                "clientData", "is the challenge's bytes followed by at least one byte of the app's")
        }
    }

    /// The client data input of an attestation of `challenge` that sent `clientData`: the challenge alone when it
    /// sent none, else `clientData` once it is the challenge's bytes followed by at least one byte.
    /// - Returns: The input and the app's bytes (`nil` without client data).
    /// - Throws: `client_data_challenge_mismatch`.
    static func input(
        _ clientData: [UInt8]?, challenge: [UInt8]
    ) throws(FlowError) -> (ClientDataInput, appData: [UInt8]?) {
        guard let clientData else { return (.challenge(challenge), nil) }
        // Never an early exit: the length is public, the prefix is compared in constant time.
        guard clientData.count > challenge.count,
            ConstantTime.equal(clientData[..<challenge.count], challenge)
        else { throw FlowError.clientDataChallengeMismatch }
        return (.clientData(clientData), Array(clientData[challenge.count...]))
    }

    /// Registers the key, and with `appKey` the app key a key attestation binds to it: then the attestation's
    /// client data is the ``KeyAttestationClientData`` of the challenge id and `appKey` instead of the challenge,
    /// and a key already registered with another app key is `app_key_mismatch` rather than `key_exists` (both only
    /// once the attestation verified).
    ///
    /// With `clientData` (and no `appKey`), the client data is those bytes, the challenge's followed by the app's
    /// (``registerVerified(keyID:attestation:challengeID:clientData:now:admit:)``).
    func register(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, appKey: AppKey?, clientData: [UInt8]? = nil,
        now: Date, admit: (AppID) async throws(FlowError) -> Void
    ) async throws(FlowError) -> Registered {
        guard let verifier else { throw FlowError.appsNotConfigured }
        guard let recorder else {
            return try await decide(
                keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: appKey,
                clientData: clientData, now: now, verifier: verifier, store: DirectDecisionStore(store: store),
                admit: admit)
        }
        return try await register(
            keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: appKey, clientData: clientData,
            now: now, verifier: verifier, admit: admit, recordingTo: recorder)
    }

    /// The registrar's decision, reading and writing through `store`.
    func decide(
        keyID: KeyID, attestation: [UInt8], challengeID: ChallengeID, appKey: AppKey?, clientData sent: [UInt8]? = nil,
        now: Date, verifier: AttestationVerifier, store: some DecisionStore,
        admit: (AppID) async throws(FlowError) -> Void
    ) async throws(FlowError) -> Registered {
        let challenge: StoredChallenge
        do throws(StoreError) {
            // An attest challenge bound to a key (the one the attestation ramp admitted) is for that key only.
            challenge = try await store.consumeChallenge(challengeID, purpose: .attest, keyID: keyID, now: now)
        } catch {
            throw FlowError(error)
        }
        let clientData: ClientDataInput
        var appData: [UInt8]?
        if let appKey {
            do throws(RequestBindingError) {
                let binding = try KeyAttestationClientData(challengeId: challengeID.string, appKey: appKey.der)
                clientData = .clientData(binding.clientData)
            } catch {
                throw FlowError(error)
            }
        } else {
            (clientData, appData) = try Self.input(sent, challenge: challenge.bytes)
        }
        let verified: VerifiedAttestation
        do throws(AttestKitError) {
            verified = try await verifier.verify(attestation, keyID: keyID, clientData: clientData, at: now)
        } catch {
            throw FlowError(error)
        }
        // A challenge issued for one app (the one whose ramp admitted it) is for that app's attestation only.
        if let bound = challenge.rpIDHash, !ConstantTime.equal(bound, verified.appID.rpIDHash) {
            throw FlowError.challengeAppMismatch
        }
        // Only now, for an attestation of this very key: is it already registered, and with which app key?
        let existing: KeyRecord?
        do throws(StoreError) {
            existing = try await store.key(keyID)
        } catch {
            if error.code == .storageUnavailable { await Self.giveBack(challenge, to: store) }
            throw FlowError(error)
        }
        if let existing {
            if let appKey, let bound = existing.appKey, bound != appKey { throw FlowError.appKeyMismatch }
            throw FlowError(StoreError.keyExists)
        }
        do throws(FlowError) {
            try await admit(verified.appID)
        } catch {
            await Self.giveBack(challenge, to: store)
            throw error
        }
        do throws(StoreError) {
            let record = try await store.registerKey(KeyRegistration(verified, appKey: appKey), now: now)
            return Registered(record: record, attestation: verified, appData: appData)
        } catch {
            // Unavailable: perhaps stored after all (a deadline past the commit); a post of the same attestation
            // then finds the key and is answered `key_exists`, which the client takes as registered.
            if error.code == .storageUnavailable { await Self.giveBack(challenge, to: store) }
            throw FlowError(error)
        }
    }

    /// Gives a consumed challenge back after a failure that is no verdict on the attestation ("not now": the `admit`
    /// hook's refusal, a budget say, or the store unavailable after the consumption), so that the client's post of
    /// the same attestation later can still register the key: Apple attests a key once. Best effort, with a deadline
    /// of its own (the request's may be what failed), and out of the request's cancellation (a server stopping past
    /// its grace period cancels it, and PostgreSQL's store refuses work for a cancelled task): a store that cannot
    /// answer leaves it consumed.
    private static func giveBack(_ challenge: StoredChallenge, to store: some DecisionStore) async {
        await Task {
            await StoreRequestDeadline.withOwnDeadlines { try? await store.releaseChallenge(challenge) }
        }.value
    }
}
