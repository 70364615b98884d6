public import AttestKitWire
public import Foundation

extension AttestKitService {
    /// `POST /v1/attestations` (`AttestationRequest`) with `clientData`: registers a key attested over the
    /// challenge's bytes followed by the app's own (`AttestationClientData`).
    /// - Parameters:
    ///   - keyID: The key, Base64.
    ///   - attestation: Its attestation object, made with SHA-256 of `clientData`.
    ///   - challengeID: The challenge whose bytes begin `clientData`.
    ///   - clientData: The exact bytes hashed for `attestKey`: `AttestationClientData.clientData`.
    /// - Returns: The registered key, with the app's bytes as `appData`.
    /// - Throws: ``AttestKitClientError``; ``AttestKitClientError/Code/invalidResponse`` for an answer that is not a
    ///   key record.
    public func registerAttestation(
        keyID: String, attestation: Data, challengeID: String, clientData: Data
    ) async throws -> KeyRecordResponse {
        let request = AttestationRequest(
            keyId: keyID, attestation: attestation.base64EncodedString(), challengeId: challengeID,
            clientData: clientData.base64EncodedString())
        return try await post("v1/attestations", request, answer: KeyRecordResponse.self, "the attestation answer")
    }
}
