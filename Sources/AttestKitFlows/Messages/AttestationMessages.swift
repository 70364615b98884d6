/// `POST /v1/attestations` request.
package struct AttestationRequest: Decodable {
    package var keyId: String
    package var attestation: String
    package var challengeId: String
}
