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
        /// Whether it was posted (set before the first post): a later post's `challenge_consumed`,
        /// `challenge_not_found` or `key_exists` then means that the earlier post registered the key, its answer lost
        /// (``registeredByEarlierPost(_:postedBefore:)``).
        var posted = false
    }

    /// What the post of an attestation for a binding came to.
    enum BoundRegistration<Answer: Sendable>: Sendable {
        /// The service's answer.
        case answered(Answer)
        /// An earlier post of the attestation registered the key, and its answer was lost: the post again was
        /// answered as for a key registered already (``registeredByEarlierPost(_:postedBefore:)``).
        case answerLost
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
    /// An attestation a passing failure interrupted is taken up while its challenge is valid (one posted already,
    /// whatever its challenge: its post may have registered the key): after
    /// `serverUnavailable` the same key is attested with the same client data hash (as Apple asks), and an
    /// attestation object the device made already is returned as it is, to be posted again. Otherwise the key kept
    /// from a deferred or failed start, or a new one, asks for an `attest` challenge naming it, and `clientData`
    /// builds what the key is attested over.
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/attestationDeferred`` while the service's ramp
    ///   defers the key (kept for the next call); ``AttestKitClientError/Code/unavailable`` when the device or the
    ///   service cannot help now; what `clientData` throws.
    private func deviceAttestation(
        for binding: AttestationBinding,
        clientData: (AttestKitService.Challenge) throws -> BoundClientData
    ) async throws -> (keyID: String, challengeID: String, clientData: BoundClientData, attestation: Data) {
        guard provider.isSupported else {
            throw AttestKitClientError(
                .unavailable, deviceError: .featureUnsupported, reason: "App Attest is not supported here")
        }
        var pending = pendingAttestations[binding]
        if let current = pending, !current.posted, let expiresAt = current.expiresAt, now() >= expiresAt {
            // The challenge expired: its attestation would be refused. One posted already is kept: its post may have
            // registered the key (``registerBound(for:clientData:send:)`` posts it again to learn whether it did).
            pending = nil
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

    /// Makes (or takes up again) the device's attestation of a new key for `binding` and posts it with `send`.
    ///
    /// A passing failure of the post (network, 5xx, 429) keeps the attestation for the next call and fails with
    /// ``AttestKitClientError/Code/unavailable``. A refusal for good drops it (the next call starts over with a new
    /// key) and is rethrown, except, for an attestation posted before (its answer lost), the refusals that mean an
    /// earlier post registered the key, as for the manager's own key: then ``BoundRegistration/answerLost``. An
    /// attestation posted before whose challenge has expired since is posted again only to learn that: refused
    /// otherwise, or answered `challenge_not_found` (the service deletes expired challenges, consumed or not, so it
    /// tells nothing then), the call starts over with a new key at once.
    /// - Returns: The attested key and what its post came to.
    func registerBound<Answer: Sendable>(
        for binding: AttestationBinding,
        clientData: (AttestKitService.Challenge) throws -> BoundClientData,
        send: (_ keyID: String, _ challengeID: String, _ clientData: BoundClientData, _ attestation: Data)
            async throws -> Answer
    ) async throws -> (keyID: String, registration: BoundRegistration<Answer>) {
        // At most twice: an expired attestation posted again and refused, then a new one.
        var startedOver = false
        while true {
            let made = try await deviceAttestation(for: binding, clientData: clientData)
            let postedBefore = pendingAttestations[binding]?.posted == true
            let expired = pendingAttestations[binding]?.expiresAt.map { now() >= $0 } == true
            pendingAttestations[binding]?.posted = true  // before the post: a lost answer may have registered it
            let answer: Answer
            do {
                answer = try await send(made.keyID, made.challengeID, made.clientData, made.attestation)
            } catch let error as AttestKitClientError where error.isTransient {
                throw error.unavailable("the attestation could not be sent")
            } catch let error as AttestKitClientError
                where Self.registeredByEarlierPost(error, postedBefore: postedBefore)
                // Past its expiry the service's cleanup deletes a challenge, consumed or not: `not found`
                // then tells nothing, and a new key is the safe answer (its binding to the app's bytes holds).
                && !(expired && error.serviceCode == "challenge_not_found")
            {
                pendingAttestations[binding] = nil
                return (made.keyID, .answerLost)
            } catch {
                // Refused for good: this attestation will never be registered.
                pendingAttestations[binding] = nil
                guard postedBefore, expired, !startedOver else { throw error }
                startedOver = true
                continue
            }
            pendingAttestations[binding] = nil
            return (made.keyID, .answered(answer))
        }
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
