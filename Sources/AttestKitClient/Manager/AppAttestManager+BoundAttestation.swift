import AttestKitWire
import Foundation

extension AppAttestManager {
    /// What the attestation of a new App Attest key binds besides the service's challenge: a key of the app's own
    /// (``attestAppKey(publicKeyDER:)``) or bytes of the app's own (``attestKey(appData:)``). The manager keeps, per
    /// binding, the key it generated and the attestation a passing failure interrupted, so that the next call for
    /// the same binding goes on with them.
    enum AttestationBinding: Hashable, Sendable {
        /// The app key's SubjectPublicKeyInfo, DER.
        case appKey(Data)
        /// The app's bytes, after the challenge in the client data.
        case appData(Data)
    }

    /// The client data a new key is attested over.
    struct BoundClientData: Sendable {
        /// The bytes: posted with the attestation for app data; the service rebuilds an app key's
        /// (`KeyAttestationClientData`) from the challenge id and the key.
        let bytes: Data
        /// Their SHA-256: what the device attests the key with.
        let hash: Data
    }

    /// An attestation of a new key under way or interrupted: the key, the challenge and client data it is attested
    /// with, and the attestation object once the device made it.
    struct PendingAttestation: Sendable {
        /// The new App Attest key.
        let keyID: String
        /// The `attest` challenge the client data holds or names.
        let challengeID: String
        /// When the service stops accepting the challenge, by this device's clock (``deviceExpiry(of:)``), when it
        /// said.
        let expiresAt: Date?
        /// The client data.
        let clientData: BoundClientData
        /// The attestation object, once the device made it.
        var attestation: Data?
    }

    /// A key generated for an attestation that has no challenge yet: kept (this run) while the service defers it or
    /// the challenge could not be fetched, so that the next call asks with the same key (the service's ramp draws
    /// by the key: a new key would be a new draw).
    struct KeptKey: Sendable {
        /// The new App Attest key.
        let keyID: String
        /// Until when the service deferred its attestation (its ramp), or `nil`.
        let deferredUntil: Date?
    }

    /// The device's attestation of a new key for `binding`, made or taken up again.
    ///
    /// An attestation a passing failure interrupted is taken up while its challenge is valid: after
    /// `serverUnavailable` the same key is attested with the same client data hash (as Apple asks), and an
    /// attestation object the device made already is returned as it is, to be posted again. Otherwise the key kept
    /// from a deferred or failed start, or a new one, asks for an `attest` challenge naming it, and `clientData`
    /// builds what the key is attested over.
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/attestationDeferred`` while the service's ramp
    ///   defers the key (kept for the next call); ``AttestKitClientError/Code/unavailable`` when the device or the
    ///   service cannot help now; what `clientData` throws.
    func deviceAttestation(
        for binding: AttestationBinding,
        clientData: (AttestKitService.Challenge) throws -> BoundClientData
    ) async throws -> (keyID: String, challengeID: String, clientData: BoundClientData, attestation: Data) {
        guard provider.isSupported else {
            throw AttestKitClientError(
                .unavailable, deviceError: .featureUnsupported, reason: "App Attest is not supported here")
        }
        var pending = pendingAttestations[binding]
        if let current = pending, let expiresAt = current.expiresAt, now() >= expiresAt {
            pending = nil  // the challenge expired: its attestation would be refused
        }
        var current: PendingAttestation
        if let pending {
            current = pending
        } else {
            current = try await startAttestation(for: binding, clientData: clientData)
        }
        pendingAttestations[binding] = current
        if let attestation = current.attestation {
            return (current.keyID, current.challengeID, current.clientData, attestation)
        }
        let attestation: Data
        do {
            attestation = try await provider.attestKey(current.keyID, clientDataHash: current.clientData.hash)
        } catch {
            let deviceError = error as? DeviceServiceError ?? .unknown
            if deviceError != .serverUnavailable && deviceError != .unknown {
                // The key cannot be attested (invalid, or unsupported here): the next call starts over.
                pendingAttestations[binding] = nil
            }
            throw AttestKitClientError(
                .unavailable, deviceError: deviceError, reason: "the device failed attesting: \(deviceError)")
        }
        current.attestation = attestation
        pendingAttestations[binding] = current
        return (current.keyID, current.challengeID, current.clientData, attestation)
    }

    /// Posts the attestation made for `binding` with `send`. A passing failure (network, 5xx, 429) keeps it for the
    /// next call and fails with ``AttestKitClientError/Code/unavailable``; a refusal for good drops it (the next call
    /// starts over with a new key) and is rethrown.
    func postAttestation<Answer: Sendable>(
        for binding: AttestationBinding, _ send: () async throws -> Answer
    ) async throws -> Answer {
        let answer: Answer
        do {
            answer = try await send()
        } catch let error as AttestKitClientError where error.isTransient {
            throw error.unavailable("the attestation could not be sent")
        } catch {
            // Refused for good: this attestation will never be registered.
            pendingAttestations[binding] = nil
            throw error
        }
        pendingAttestations[binding] = nil
        return answer
    }

    /// A new App Attest key (or the one kept from a deferred or failed start), a challenge asked for with it, and
    /// the client data for them.
    ///
    /// The key comes first (it costs nothing at Apple), so that the service's ramp decides by it: a deferral
    /// (429 `attestation_deferred`) keeps the key for this run, attests nothing, and fails with
    /// ``AttestKitClientError/Code/attestationDeferred`` until its `Retry-After` has passed.
    private func startAttestation(
        for binding: AttestationBinding,
        clientData: (AttestKitService.Challenge) throws -> BoundClientData
    ) async throws -> PendingAttestation {
        let keyID: String
        if let kept = keptKeys[binding] {
            // A deferral further ahead than the longest honoured was set by a clock that was ahead: it is over.
            if let until = kept.deferredUntil, isWaiting(until: until, atMost: configuration.maximumDeferral) {
                throw Self.deferral(until: until)
            }
            keyID = kept.keyID
        } else {
            do {
                keyID = try await provider.generateKey()
            } catch {
                let deviceError = error as? DeviceServiceError ?? .unknown
                throw AttestKitClientError(
                    .unavailable, deviceError: deviceError,
                    reason: "the device failed generating a key: \(deviceError)")
            }
            keptKeys[binding] = KeptKey(keyID: keyID, deferredUntil: nil)
        }
        let challenge: AttestKitService.Challenge
        do {
            challenge = try await attestationChallenge(for: keyID)
        } catch let error as AttestKitClientError where error.isAttestationDeferral {
            let until = deferredUntil(error.retryAfterSeconds)
            keptKeys[binding] = KeptKey(keyID: keyID, deferredUntil: until)
            throw Self.deferral(until: until)
        } catch let error as AttestKitClientError where error.isTransient {
            throw error.unavailable("no attestation challenge")
        }
        keptKeys[binding] = nil
        return PendingAttestation(
            keyID: keyID, challengeID: challenge.id, expiresAt: deviceExpiry(of: challenge),
            clientData: try clientData(challenge))
    }
}
