public import AttestKitWire
public import Foundation

extension AttestKitService {
    /// `POST /v1/key-attestations` (`KeyAttestationRequest`): registers an App Attest key attested for an app key.
    /// - Parameters:
    ///   - keyID: The new App Attest key, Base64.
    ///   - attestation: Its attestation object, made with SHA-256 of the `KeyAttestationClientData`.
    ///   - challengeID: The challenge the client data names.
    ///   - appKey: The app key's SubjectPublicKeyInfo, DER.
    /// - Returns: The registered key with its app key.
    /// - Throws: ``AttestKitClientError``.
    public func registerKeyAttestation(
        keyID: String, attestation: Data, challengeID: String, appKey: Data
    ) async throws -> KeyAttestationResponse {
        let request = KeyAttestationRequest(
            keyId: keyID, attestation: attestation.base64EncodedString(), challengeId: challengeID,
            appKey: appKey.base64EncodedString())
        return try await post(
            "v1/key-attestations", request, answer: KeyAttestationResponse.self, "the key attestation answer")
    }
}
