/// `POST /v1/attestations` request.
struct AttestationRequest: Decodable {
    var keyId: String
    var attestation: String
    var challengeId: String
}
