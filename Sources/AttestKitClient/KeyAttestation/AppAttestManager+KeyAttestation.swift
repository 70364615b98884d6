public import AttestKitWire
import Crypto
public import Foundation

extension AppAttestManager {
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
    /// next call for the same `publicKeyDER` goes on with them while the challenge is valid (a posted attestation,
    /// even after: its post may have registered the key). A post again answered `challenge_consumed`,
    /// `challenge_not_found` or `key_exists` means that the lost post registered the key: nothing is attested
    /// again, and the call fails with ``AttestKitClientError/Code/answerLost`` (the answer, the app key's thumbprint
    /// and certificate, is not to be had again; the next call attests a new key). Concurrent calls for one key
    /// share one attestation. The new key's id joins ``KeyState/retiredKeyIDs`` once the service registered it, so
    /// that ``keyIDsForErasure()`` names it (when the key store can be read and written by this manager).
    /// - Parameter publicKeyDER: The app key's SubjectPublicKeyInfo, DER (CryptoKit's `derRepresentation`).
    /// - Returns: The registered App Attest key with `KeyRecordResponse.appKey` (its thumbprint, and a
    ///   certificate when the service has a CA).
    /// - Throws: ``AttestKitClientError``: ``AttestKitClientError/Code/invalidRequest`` for a key the service would
    ///   refuse (anything but the canonical DER SubjectPublicKeyInfo of a P-256 public key, as
    ///   `P256.Signing.PublicKey.derRepresentation` gives), before the device spends an attestation on it;
    ///   ``AttestKitClientError/Code/unavailable`` when App Attest, Apple or the service cannot help now;
    ///   ``AttestKitClientError/Code/attestationDeferred`` while the service's ramp defers the attestation (its
    ///   ``AttestKitClientError/retryAfter``; the key is kept for the next call);
    ///   ``AttestKitClientError/Code/httpError`` when the service refused the attestation (a new key is made on the
    ///   next call); ``AttestKitClientError/Code/answerLost`` when the service registered it but its answer was
    ///   lost; ``AttestKitClientError/Code/invalidResponse`` for an answer without the app key.
    public func attestAppKey(publicKeyDER: Data) async throws -> KeyAttestationResponse {
        if let running = keyAttestations[publicKeyDER] { return try await running.value }
        let task = Task { try await self.keyAttestation(publicKeyDER) }
        keyAttestations[publicKeyDER] = task
        defer { keyAttestations[publicKeyDER] = nil }
        return try await task.value
    }

    private func keyAttestation(_ publicKeyDER: Data) async throws -> KeyAttestationResponse {
        // The service binds only a P-256 key in its canonical DER (a 91-byte SubjectPublicKeyInfo): anything else
        // would be refused after the device attested a key for it, an attestation spent for nothing.
        guard publicKeyDER.count <= KeyAttestationClientData.maximumAppKeyLength,
            let key = try? P256.Signing.PublicKey(derRepresentation: publicKeyDER),
            key.derRepresentation == publicKeyDER
        else {
            throw AttestKitClientError(
                .invalidRequest, reason: "the app key is not the DER SubjectPublicKeyInfo of a P-256 public key")
        }
        let (keyID, registration) = try await registerBound(for: .appKey(publicKeyDER)) { challenge in
            do {
                let clientData = try KeyAttestationClientData(challengeId: challenge.id, appKey: publicKeyDER)
                return BoundClientData(bytes: Data(clientData.clientData), hash: Data(clientData.clientDataHash))
            } catch {
                throw AttestKitClientError(.invalidResponse, reason: "the challenge id cannot be bound: \(error)")
            }
        } send: { keyID, challengeID, _, attestation in
            try await service.registerKeyAttestation(
                keyID: keyID, attestation: attestation, challengeID: challengeID, appKey: publicKeyDER)
        }
        // Registered (the answer lost or not): the service holds a row of the key, which an erasure must name.
        await keepForErasure(keyID)
        switch registration {
        case .answered(let answer):
            guard answer.appKey != nil else {
                throw AttestKitClientError(.invalidResponse, reason: "the key attestation answer names no app key")
            }
            return answer
        case .answerLost:
            throw AttestKitClientError(
                .answerLost,
                reason: "the service registered the key attestation, but its answer (the app key's thumbprint and "
                    + "certificate) was lost")
        }
    }
}
