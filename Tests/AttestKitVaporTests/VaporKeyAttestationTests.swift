import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import AttestKitWire
import Crypto
import Foundation
import Testing
import Vapor
import VaporTesting

/// `POST v1/key-attestations` of the Vapor route collection: the same flow and answers as the service's route.
@Suite("Vapor key attestation")
struct VaporKeyAttestationTests {
    @Test(
        "an attestation binding an app key registers both; a swapped app key is refused",
        arguments: await VaporBench.backends())
    func keyAttestation(backend: String) async throws {
        try await VaporBench.withApplication(backend) { app in
            let (device, keyID) = VaporBench.device()
            let appKey = P256.Signing.PrivateKey().publicKey
            var challengeID = ""
            try await app.testing().test(.POST, "/v1/challenges", body: try VaporBench.json(["purpose": "attest"])) {
                response in
                challengeID = VaporBench.object(response)?["challengeId"] as? String ?? ""
            }
            let clientData = try KeyAttestationClientData(
                challengeId: challengeID, appKey: Array(appKey.derRepresentation))
            let attestation = try device.attestKey(keyID, clientDataHash: clientData.clientDataHash)
            func body(_ key: P256.Signing.PublicKey) throws -> ByteBuffer {
                try VaporBench.json([
                    "keyId": keyID.base64, "attestation": Data(attestation).base64EncodedString(),
                    "challengeId": challengeID, "appKey": key.derRepresentation.base64EncodedString(),
                ])
            }
            // Another app key than the attestation's: the nonce does not match (and the challenge is spent).
            try await app.testing().test(
                .POST, "/v1/key-attestations", body: try body(P256.Signing.PrivateKey().publicKey)
            ) { response in
                #expect(response.status == .forbidden && VaporBench.code(response) == "nonce_mismatch")
            }
            try await app.testing().test(.POST, "/v1/challenges", body: try VaporBench.json(["purpose": "attest"])) {
                response in
                challengeID = VaporBench.object(response)?["challengeId"] as? String ?? ""
            }
            // A fresh challenge needs a fresh attestation: a new device key (an attested key cannot attest again).
            let (secondDevice, secondKeyID) = VaporBench.device()
            let secondData = try KeyAttestationClientData(
                challengeId: challengeID, appKey: Array(appKey.derRepresentation))
            let second = try secondDevice.attestKey(secondKeyID, clientDataHash: secondData.clientDataHash)
            let accepted = try VaporBench.json([
                "keyId": secondKeyID.base64, "attestation": Data(second).base64EncodedString(),
                "challengeId": challengeID, "appKey": appKey.derRepresentation.base64EncodedString(),
            ])
            try await app.testing().test(.POST, "/v1/key-attestations", body: accepted) { response in
                #expect(response.status == .created)
                let answer = VaporBench.object(response)
                #expect(answer?["keyId"] as? String == secondKeyID.base64)
                let bound = answer?["appKey"] as? [String: Any]
                #expect(bound?["thumbprint"] as? String == TokenKey(publicKey: appKey).kid)
                #expect(bound?["certificate"] == nil)
            }
            #expect(try await app.attestKit?.store.key(secondKeyID)?.appKey?.der == Array(appKey.derRepresentation))
            #expect(try await app.attestKit?.store.key(keyID) == nil)
        }
    }
}
