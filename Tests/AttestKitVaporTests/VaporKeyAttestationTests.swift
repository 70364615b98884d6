import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitVapor
import AttestKitWire
import Crypto
import Foundation
import NIOCore
import Testing
import Vapor
import VaporTesting

/// `POST v1/key-attestations` of the Vapor route collection: the same flow and answers as the service's route.
@Suite("Vapor key attestation")
struct VaporKeyAttestationTests {
    /// A simulated device of the app with a new key.
    static func device() -> (device: SimulatedDevice, keyID: KeyID) {
        let device = SimulatedDevice(
            apple: VaporBench.apple,
            configuration: .init(
                appID: VaporBench.appID, environment: .development, iOS27: false, osVersion: nil, validationCategory: 1)
        )
        return (device, device.generateKey())
    }

    /// The JSON object of a response body.
    static func object(_ response: TestingHTTPResponse) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(response.body.readableBytesView)) as? [String: Any]
    }

    static func json(_ object: [String: String]) throws -> ByteBuffer {
        ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: object))
    }

    /// A new attest challenge's id.
    static func challenge(_ app: Application) async throws -> String {
        var challengeID = ""
        try await app.testing().test(.POST, "/v1/challenges", body: try json(["purpose": "attest"])) { response in
            challengeID = object(response)?["challengeId"] as? String ?? ""
        }
        return challengeID
    }

    /// A key attestation body: `keyID`'s attestation over the client data of `challengeID` and `boundKey`, sent
    /// with `sentKey`.
    static func body(
        _ device: SimulatedDevice, _ keyID: KeyID, challengeID: String, boundKey: P256.Signing.PublicKey,
        sentKey: P256.Signing.PublicKey
    ) throws -> ByteBuffer {
        let clientData = try KeyAttestationClientData(
            challengeId: challengeID, appKey: Array(boundKey.derRepresentation))
        let attestation = try device.attestKey(keyID, clientDataHash: clientData.clientDataHash)
        return try json([
            "keyId": keyID.base64, "attestation": Data(attestation).base64EncodedString(), "challengeId": challengeID,
            "appKey": sentKey.derRepresentation.base64EncodedString(),
        ])
    }

    @Test("an attestation binding an app key registers both; a swapped app key is refused")
    func keyAttestation() async throws {
        try await VaporBench.withApplication { app in
            let appKey = P256.Signing.PrivateKey().publicKey
            // Made for one app key, sent with another: the nonce does not match.
            let (device, keyID) = Self.device()
            let swapped = try Self.body(
                device, keyID, challengeID: try await Self.challenge(app), boundKey: appKey,
                sentKey: P256.Signing.PrivateKey().publicKey)
            try await app.testing().test(.POST, "/v1/key-attestations", body: swapped) { response in
                #expect(response.status == .forbidden && VaporBench.code(response) == "nonce_mismatch")
            }
            #expect(try await app.attestKit?.application.store.key(keyID) == nil)

            let (second, secondKeyID) = Self.device()
            let accepted = try Self.body(
                second, secondKeyID, challengeID: try await Self.challenge(app), boundKey: appKey, sentKey: appKey)
            try await app.testing().test(.POST, "/v1/key-attestations", body: accepted) { response in
                #expect(response.status == .created)
                let answer = Self.object(response)
                #expect(answer?["keyId"] as? String == secondKeyID.base64)
                let bound = answer?["appKey"] as? [String: Any]
                #expect(bound?["thumbprint"] as? String == TokenKey(publicKey: appKey).kid)
                #expect(bound?["certificate"] == nil)
            }
            let stored = try await app.attestKit?.application.store.key(secondKeyID)
            #expect(stored?.appKey?.der == Array(appKey.derRepresentation))
        }
    }
}
