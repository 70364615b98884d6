public import AttestKitWire
public import Foundation

extension AppAttestManager {
    /// Attests a **new** App Attest key over the service's challenge followed by bytes of the app's own (a user id, a
    /// session, a nonce of the app's), registers it (`POST /v1/attestations` with `clientData`), and makes it this
    /// manager's key: the requests that follow are asserted with it, and the previous key is forgotten.
    ///
    /// The manager generates a key, fetches an `attest` challenge naming it (the service's ramp decides on it),
    /// builds `AttestationClientData` (the challenge's bytes exactly as the service issued them, then `appData`),
    /// passes SHA-256 of the client data to `attestKey`, and sends the client data with the attestation. The service checks that the client data begins
    /// with the challenge, verifies the attestation over it, and answers the app's bytes as `appData`. Each call
    /// costs one attestation, which Apple counts per device: call it when the bound bytes change (a sign-in), not
    /// per request. A failure keeps the current key; the next call starts over with a new key and challenge.
    /// Concurrent calls of ``attestedKeyID()`` wait for this one's key while no key is registered; concurrent calls of
    /// this method each attest a key, and the last one registered becomes the manager's. A key the manager replaces
    /// on its own later (the device or the service lost it, ``resetKey(_:)``) is attested over the challenge alone:
    /// call this again to bind the bytes to the new key.
    /// - Parameter appData: The app's bytes, at least one, at most `AttestationClientData.maximumLength` minus the
    ///   challenge's length (32).
    /// - Returns: The registered key, with `appData`.
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/invalidRequest`` for no bytes or too many
    ///   (before anything is asked of the service or the device); ``AttestKitClientError/Code/unavailable`` when App
    ///   Attest, Apple or the service cannot help now; ``AttestKitClientError/Code/attestationDeferred`` while the
    ///   service's ramp defers this install (nothing was attested; ask again after its `retryAfter`);
    ///   ``AttestKitClientError/Code/httpError`` when the service
    ///   refused the attestation; ``AttestKitClientError/Code/invalidResponse`` for an answer without the app's
    ///   bytes; ``AttestKitClientError/Code/keyStore`` when the key store fails or another manager uses it.
    public func attestKey(appData: Data) async throws -> KeyRecordResponse {
        guard !appData.isEmpty,
            appData.count <= AttestationClientData.maximumLength - AttestationClientData.minimumChallengeLength
        else {
            throw AttestKitClientError(.invalidRequest, reason: "the app's bytes are empty or too long to be bound")
        }
        guard claim != nil else {
            throw AttestKitClientError(
                .keyStore, reason: "another AppAttestManager of this process uses this key store")
        }
        if let running = obtaining { _ = try? await running.value }
        let attesting = Task { try await self.attestationWithAppData(appData) }
        let keyID = Task { try await attesting.value.keyId }
        obtaining = keyID
        defer { if obtaining == keyID { obtaining = nil } }
        return try await attesting.value
    }

    private func attestationWithAppData(_ appData: Data) async throws -> KeyRecordResponse {
        guard provider.isSupported else {
            throw AttestKitClientError(
                .unavailable, deviceError: .featureUnsupported, reason: "App Attest is not supported here")
        }
        // The key first (it costs nothing at Apple), so that the challenge names it: the service's ramp decides on
        // it, and binds the challenge to it.
        let keyID: String
        do {
            keyID = try await provider.generateKey()
        } catch {
            let deviceError = error as? DeviceServiceError ?? .unknown
            throw AttestKitClientError(
                .unavailable, deviceError: deviceError, reason: "the device failed generating a key: \(deviceError)")
        }
        let challenge: AttestKitService.Challenge
        do {
            challenge = try await attestationChallenge(for: keyID)
        } catch let error as AttestKitClientError where error.isAttestationDeferral {
            // The service's ramp: not now. Nothing is attested; the current key stays the manager's.
            throw Self.deferral(until: deferredUntil(error.retryAfterSeconds))
        } catch let error as AttestKitClientError where error.isTransient {
            throw error.unavailable("no attestation challenge")
        }
        let clientData: AttestationClientData
        do {
            clientData = try AttestationClientData(challenge: challenge.bytes, appData: appData)
        } catch {
            throw AttestKitClientError(.invalidResponse, reason: "the challenge cannot be bound: \(error)")
        }
        let attestation: Data
        do {
            attestation = try await provider.attestKey(keyID, clientDataHash: Data(clientData.clientDataHash))
        } catch {
            let deviceError = error as? DeviceServiceError ?? .unknown
            throw AttestKitClientError(
                .unavailable, deviceError: deviceError, reason: "the device failed attesting: \(deviceError)")
        }
        let answer: KeyRecordResponse
        do {
            answer = try await service.registerAttestation(
                keyID: keyID, attestation: attestation, challengeID: challenge.id,
                clientData: Data(clientData.clientData))
        } catch let error as AttestKitClientError where error.isTransient {
            throw error.unavailable("the attestation could not be sent")
        }
        guard answer.keyId == keyID, answer.appData == appData.base64EncodedString() else {
            throw AttestKitClientError(
                .invalidResponse, reason: "the attestation answer does not name the key and the app's bytes")
        }
        try save(KeyState(stage: .registered, keyID: keyID))
        attestationCount += 1
        return answer
    }
}
