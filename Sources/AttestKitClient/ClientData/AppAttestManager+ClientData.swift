public import AttestKitWire
public import Foundation

extension AppAttestManager {
    /// Attests a **new** App Attest key over the service's challenge followed by bytes of the app's own (a user id, a
    /// session, a nonce of the app's), registers it (`POST /v1/attestations` with `clientData`), and makes it this
    /// manager's key: the requests that follow are asserted with it, and the previous key is forgotten (its id is kept
    /// in ``KeyState/retiredKeyIDs`` when the service may hold it, for ``keyIDsForErasure()``).
    ///
    /// The manager generates a key, fetches an `attest` challenge naming it (the service's ramp decides on it),
    /// builds `AttestationClientData` (the challenge's bytes exactly as the service issued them, then `appData`),
    /// passes SHA-256 of the client data to `attestKey`, and sends the client data with the attestation. The service checks that the client data begins
    /// with the challenge, verifies the attestation over it, and answers the app's bytes as `appData`. Each call
    /// costs one attestation, which Apple counts per device: call it when the bound bytes change (a sign-in), not
    /// per request. A failure keeps the current key.
    ///
    /// Nothing is burnt by a passing failure: after `serverUnavailable` the new key and its client data hash, and
    /// after a failed post (network, 5xx, 429) the attestation object, are kept (in memory, for this run) and the
    /// next call with the same `appData` goes on with them while the challenge is valid (a posted attestation, even
    /// after: its post may have registered the key); a key the service's ramp deferred is kept too, and asks again
    /// with the same key once the wait is over. A post again answered `challenge_consumed`, `challenge_not_found` or
    /// `key_exists` means that the lost post registered the key, as for the manager's own key: nothing is attested
    /// again, the key becomes the manager's, and the call fails with ``AttestKitClientError/Code/answerLost`` (the
    /// service's record of it is not to be had again). A refusal for good (or a device that cannot attest the key)
    /// starts over with a new key on the next call (at once, for a posted attestation whose challenge expired).
    /// Concurrent calls of ``attestedKeyID()`` wait for this one's key while no key is registered (and, when it fails
    /// otherwise than that method does, get ``AttestKitClientError/Code/unavailable``: their requests fall back to the
    /// strategy's next level rather than fail with this attestation's refusal); concurrent calls of
    /// this method with the same `appData` share one attestation, with different bytes each attest a key, and the
    /// last one registered becomes the manager's. A key the manager replaces
    /// on its own later (the device or the service lost it, ``resetKey(_:)``) is attested over the challenge alone:
    /// call this again to bind the bytes to the new key.
    /// - Parameter appData: The app's bytes, at least one, at most `AttestationClientData.maximumLength` minus the
    ///   challenge's length (32).
    /// - Returns: The registered key, with `appData`.
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/invalidRequest`` for no bytes or too many
    ///   (before anything is asked of the service or the device); ``AttestKitClientError/Code/unavailable`` while the
    ///   manager backs off after a failure (its ``AttestKitClientError/retryAfter``) or when App
    ///   Attest, Apple or the service cannot help now; ``AttestKitClientError/Code/attestationDeferred`` while the
    ///   service's ramp defers this install (nothing was attested; ask again after its `retryAfter`, with the same
    ///   key);
    ///   ``AttestKitClientError/Code/keyRevoked`` while the service's revocation of the current key stands (as for
    ///   ``attestedKeyID()``: ``resetKey(_:)`` first, or ``Configuration/reattestAfterRevocation``);
    ///   ``AttestKitClientError/Code/httpError`` when the service
    ///   refused the attestation; ``AttestKitClientError/Code/answerLost`` when the service registered the key but
    ///   its answer was lost (the key is the manager's); ``AttestKitClientError/Code/invalidResponse`` for an answer
    ///   without the app's bytes; ``AttestKitClientError/Code/keyStore`` when the key store fails or another manager
    ///   uses it.
    public func attestKey(appData: Data) async throws -> KeyRecordResponse {
        guard !appData.isEmpty,
            appData.count <= AttestationClientData.maximumLength - AttestationClientData.minimumChallengeLength
        else {
            throw AttestKitClientError(.invalidRequest, reason: "the app's bytes are empty or too long to be bound")
        }
        try checkClaim()
        // Every wait is a suspension in which another call may start: look again after each. A task waited for once
        // is not waited for again (it may still be recorded, its caller not yet resumed).
        var waited: Task<String, any Error>?
        while true {
            if let running = appDataAttestations[appData] { return try await running.value }
            guard let running = obtaining, running != waited else { break }
            waited = running
            _ = try? await running.value
        }
        let current = try loadState()
        if current.stage == .revoked, !configuration.reattestAfterRevocation {
            throw AttestKitClientError(
                .keyRevoked, status: 403, serviceCode: "key_revoked",
                reason: "the service revoked this app's key; call resetKey() to attest a new one")
        }
        // As for the manager's own key: a backoff set further ahead than any failure sets is over (a clock set back).
        if let notBefore = current.notBefore, isWaiting(until: notBefore, atMost: longestBackoff) {
            throw AttestKitClientError(
                .unavailable, retryAfter: notBefore, reason: "App Attest is backing off after a failure")
        }
        let resets = keyResets
        let attesting = Task { try await self.attestationWithAppData(appData, since: resets) }
        appDataAttestations[appData] = attesting
        // What a request waiting for a key (``attestedKeyID()``) gets: the key, or an error of that method's contract,
        // so that a refusal of these bytes' attestation (`httpError`, `invalidResponse`) makes the request fall back
        // to the strategy's next level, as any key that cannot be had now does.
        let keyID = Task {
            do {
                return try await attesting.value.keyId
            } catch let error as AttestKitClientError where Self.keyWaitCodes.contains(error.code) {
                throw error
            } catch let error as AttestKitClientError where error.code == .answerLost {
                // Registered, its answer lost: the key is the manager's (unless something replaced it meanwhile).
                guard let state = self.state, state.stage == .registered, let keyID = state.keyID else {
                    throw AttestKitClientError(
                        .unavailable, reason: "the key attested with the app's bytes was replaced")
                }
                return keyID
            } catch {
                throw AttestKitClientError(
                    .unavailable, reason: "the attestation of a new key with the app's bytes failed: \(error)")
            }
        }
        obtaining = keyID
        defer {
            if obtaining == keyID { obtaining = nil }
            if appDataAttestations[appData] == attesting { appDataAttestations[appData] = nil }
        }
        return try await attesting.value
    }

    /// The codes ``attestedKeyID()`` throws: an attestation with app data that fails otherwise is `unavailable` to the
    /// requests that waited for it.
    static let keyWaitCodes: Set<AttestKitClientError.Code> = [
        .unavailable, .attestationDeferred, .keyRevoked, .keyStore,
    ]

    /// The state once `keyID`, attested with the app's bytes, is the manager's key: the key before it joins
    /// ``KeyState/retiredKeyIDs`` when the service may hold it.
    private func registeredState(_ keyID: String) -> KeyState {
        var next = (state ?? KeyState()).withoutKey()
        next.stage = .registered
        next.keyID = keyID
        return next
    }

    /// Attests a new key bound to `appData` and makes it the manager's, unless ``resetKey(_:)`` was called since
    /// ``keyResets`` was `resets` (the reset stands: ``AttestKitClientError/Code/unavailable``).
    private func attestationWithAppData(_ appData: Data, since resets: Int) async throws -> KeyRecordResponse {
        let (keyID, registration) = try await registerBound(for: .appData(appData)) { challenge in
            do {
                let clientData = try AttestationClientData(challenge: challenge.bytes, appData: appData)
                return BoundClientData(bytes: Data(clientData.clientData), hash: Data(clientData.clientDataHash))
            } catch {
                throw AttestKitClientError(.invalidResponse, reason: "the challenge cannot be bound: \(error)")
            }
        } send: { keyID, challengeID, clientData, attestation in
            try await service.registerAttestation(
                keyID: keyID, attestation: attestation, challengeID: challengeID, clientData: clientData.bytes)
        }
        switch registration {
        case .answered(let answer):
            guard answer.keyId == keyID, answer.appData == appData.base64EncodedString() else {
                throw AttestKitClientError(
                    .invalidResponse, reason: "the attestation answer does not name the key and the app's bytes")
            }
            try checkNotReset(since: resets)
            try save(registeredState(keyID))
            attestationCount += 1
            return answer
        case .answerLost:
            // Registered over the app's bytes, as asked: the key is the manager's, as after the answer. (Had the
            // earlier post not registered it, its first assertion is refused as key_not_found and it is replaced.)
            try checkNotReset(since: resets)
            try save(registeredState(keyID))
            attestationCount += 1
            throw AttestKitClientError(
                .answerLost,
                reason: "the service registered the key attested with the app's bytes, but its answer was lost; "
                    + "the key is the manager's")
        }
    }
}
