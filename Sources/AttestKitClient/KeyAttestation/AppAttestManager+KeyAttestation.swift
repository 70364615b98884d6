public import AttestKitWire
public import Foundation

extension AppAttestManager {
    /// An emulated key attestation under way or interrupted: the App Attest key made for it, the challenge and
    /// client data hash it is attested with, and the attestation once the device made it.
    struct PendingKeyAttestation: Sendable {
        /// The new App Attest key, used for this attestation only.
        let keyID: String
        /// The `attest` challenge the client data names.
        let challengeID: String
        /// When the service stops accepting the challenge, when it said.
        let expiresAt: Date?
        /// SHA-256 of the `KeyAttestationClientData`.
        let clientDataHash: Data
        /// The attestation object, once the device made it.
        var attestation: Data?
    }

    /// A key generated for a key attestation that has no challenge yet: kept (this run) while the service defers
    /// it or the challenge could not be fetched, so that the next call asks with the same key.
    struct KeptKey: Sendable {
        /// The new App Attest key.
        let keyID: String
        /// Until when the service deferred its attestation (its ramp), or `nil`.
        let deferredUntil: Date?
    }

    /// Binds a key of the app's own (a Secure Enclave P-256 key it signs with, say) to a genuine instance of the
    /// app: an emulated key attestation, `POST /v1/key-attestations`.
    ///
    /// The manager generates a **new** App Attest key, fetches an `attest` challenge naming it (the service's
    /// attestation ramp decides by it), builds `KeyAttestationClientData` for the challenge and `publicKeyDER`,
    /// and attests the key with SHA-256 of that client data, then posts the
    /// attestation with the challenge id and the app key. The assertion key is never used for this (an App Attest
    /// key is attested once), and the new key serves this attestation only. Each call costs one attestation, which
    /// Apple counts per device: call it once per app key, not per request.
    ///
    /// Nothing is burnt by a passing failure: after `serverUnavailable` the new key and its client data hash, and
    /// after a failed post (network, 5xx, 429) the attestation object, are kept (in memory, for this run) and the
    /// next call for the same `publicKeyDER` goes on with them while the challenge is valid. Concurrent calls for
    /// one key share one attestation.
    /// - Parameter publicKeyDER: The app key's SubjectPublicKeyInfo, DER (CryptoKit's `derRepresentation`).
    /// - Returns: The registered App Attest key with `KeyRecordResponse.appKey` (its thumbprint, and a
    ///   certificate when the service has a CA).
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/invalidRequest`` for a key that cannot be
    ///   bound (empty or longer than `KeyAttestationClientData.maximumAppKeyLength`);
    ///   ``AttestKitClientError/Code/unavailable`` when App Attest, Apple or the service cannot help now;
    ///   ``AttestKitClientError/Code/attestationDeferred`` while the service's ramp defers the attestation (its
    ///   ``AttestKitClientError/retryAfter``; the key is kept for the next call);
    ///   ``AttestKitClientError/Code/httpError`` when the service refused the attestation (a new key is made on the
    ///   next call); ``AttestKitClientError/Code/invalidResponse`` for an answer without the app key.
    public func attestAppKey(publicKeyDER: Data) async throws -> KeyAttestationResponse {
        if let running = keyAttestations[publicKeyDER] { return try await running.value }
        let task = Task { try await self.keyAttestation(publicKeyDER) }
        keyAttestations[publicKeyDER] = task
        defer { keyAttestations[publicKeyDER] = nil }
        return try await task.value
    }

    private func keyAttestation(_ publicKeyDER: Data) async throws -> KeyAttestationResponse {
        guard (1...KeyAttestationClientData.maximumAppKeyLength).contains(publicKeyDER.count) else {
            throw AttestKitClientError(.invalidRequest, reason: "the app key is empty or too long to be bound")
        }
        guard provider.isSupported else {
            throw AttestKitClientError(
                .unavailable, deviceError: .featureUnsupported, reason: "App Attest is not supported here")
        }
        var pending = pendingKeyAttestations[publicKeyDER]
        if let current = pending, let expiresAt = current.expiresAt, now() >= expiresAt {
            pending = nil  // the challenge expired: its attestation would be refused
        }
        if pending == nil { pending = try await startKeyAttestation(publicKeyDER) }
        guard var current = pending else {
            throw AttestKitClientError(.invalidRequest, reason: "no key attestation could be started")
        }
        pendingKeyAttestations[publicKeyDER] = current
        if current.attestation == nil {
            do {
                current.attestation = try await provider.attestKey(
                    current.keyID, clientDataHash: current.clientDataHash)
                pendingKeyAttestations[publicKeyDER] = current
            } catch {
                let deviceError = error as? DeviceServiceError ?? .unknown
                if deviceError != .serverUnavailable && deviceError != .unknown {
                    // The key cannot be attested (invalid, or unsupported here): the next call starts over.
                    pendingKeyAttestations[publicKeyDER] = nil
                }
                throw AttestKitClientError(
                    .unavailable, deviceError: deviceError, reason: "the device failed attesting: \(deviceError)")
            }
        }
        guard let attestation = current.attestation else {
            throw AttestKitClientError(.unavailable, reason: "no attestation")
        }
        let answer: KeyAttestationResponse
        do {
            answer = try await service.registerKeyAttestation(
                keyID: current.keyID, attestation: attestation, challengeID: current.challengeID,
                appKey: publicKeyDER)
        } catch let error as AttestKitClientError where error.isTransient {
            throw error.unavailable("the key attestation could not be sent")
        } catch {
            // Refused for good: this attestation will never be registered.
            pendingKeyAttestations[publicKeyDER] = nil
            throw error
        }
        pendingKeyAttestations[publicKeyDER] = nil
        guard answer.appKey != nil else {
            throw AttestKitClientError(.invalidResponse, reason: "the key attestation answer names no app key")
        }
        return answer
    }

    /// A new App Attest key (or the one kept from a deferred or failed start), a challenge asked for with it, and
    /// the client data for the challenge and the app key.
    ///
    /// The key comes first, as for the assertion key, so that the service's ramp decides by it: a deferral
    /// (429 `attestation_deferred`) keeps the key for this run, attests nothing, and fails with
    /// ``AttestKitClientError/Code/attestationDeferred`` until its `Retry-After` has passed.
    private func startKeyAttestation(_ publicKeyDER: Data) async throws -> PendingKeyAttestation {
        let keyID: String
        if let kept = keyAttestationKeys[publicKeyDER] {
            if let until = kept.deferredUntil, now() < until { throw Self.deferral(until: until) }
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
            keyAttestationKeys[publicKeyDER] = KeptKey(keyID: keyID, deferredUntil: nil)
        }
        let challenge: AttestKitService.Challenge
        do {
            challenge = try await attestationChallenge(for: keyID)
        } catch let error as AttestKitClientError where error.isAttestationDeferral {
            let until = deferredUntil(error.retryAfterSeconds)
            keyAttestationKeys[publicKeyDER] = KeptKey(keyID: keyID, deferredUntil: until)
            throw Self.deferral(until: until)
        } catch let error as AttestKitClientError where error.isTransient {
            throw error.unavailable("no attestation challenge")
        }
        keyAttestationKeys[publicKeyDER] = nil
        let clientData: KeyAttestationClientData
        do {
            clientData = try KeyAttestationClientData(challengeId: challenge.id, appKey: publicKeyDER)
        } catch {
            throw AttestKitClientError(.invalidResponse, reason: "the challenge id cannot be bound: \(error)")
        }
        return PendingKeyAttestation(
            keyID: keyID, challengeID: challenge.id, expiresAt: challenge.expiresAt,
            clientDataHash: Data(clientData.clientDataHash))
    }
}
