import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitWire
import Crypto
import Foundation
import Testing

/// The client side of emulated key attestation, with the simulated device and a scripted service.
@Suite("AttestKitClient key attestation (simulated device, scripted service)")
struct KeyAttestationTests {
    typealias App = AppleRulesTests.App

    @Test("attestAppKey attests a new App Attest key with SHA-256 of the key attestation client data, and posts it")
    func attested() async throws {
        let app = App()
        try await app.order()
        let assertionKey = try #require(app.keyID)
        let appKey = P256.Signing.PrivateKey().publicKey.derRepresentation

        let answer = try await app.manager.attestAppKey(publicKeyDER: appKey)
        let sent = try #require(app.service.keyAttestationRequests.last)
        #expect(app.service.keyAttestationRequests.count == 1)
        #expect(sent.keyId != assertionKey && answer.keyId == sent.keyId && answer.appKey != nil)
        #expect(sent.appKey == appKey.base64EncodedString())
        let clientData = try KeyAttestationClientData(challengeId: sent.challengeId, appKey: appKey)
        #expect(app.provider.attestationHashes(for: sent.keyId) == [Data(clientData.clientDataHash)])
        #expect(Data(base64Encoded: sent.attestation)?.isEmpty == false)
        // One more attestation, for the new key only; the assertion key is kept and still signs.
        #expect(app.provider.calls.attestKey == 2 && app.provider.calls.generateKey == 2)
        #expect(app.keyID == assertionKey)
        #expect(try await app.order() == .appAttest)
        #expect(app.service.requests.last?.keyID == assertionKey)
    }

    @Test("serverUnavailable and a lost post burn nothing: the same key, client data hash and attestation are reused")
    func nothingBurnt() async throws {
        let app = App()
        let appKey = P256.Signing.PrivateKey().publicKey.derRepresentation
        app.provider.fail(.attestKey, with: .serverUnavailable, times: 1)
        let unavailable = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestAppKey(publicKeyDER: appKey)
        }
        #expect(unavailable?.code == .unavailable && unavailable?.deviceError == .serverUnavailable)

        app.service.scriptKeyAttestations([.drop])
        let lost = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestAppKey(publicKeyDER: appKey)
        }
        #expect(lost?.code == .unavailable)

        _ = try await app.manager.attestAppKey(publicKeyDER: appKey)
        let sent = app.service.keyAttestationRequests
        #expect(sent.count == 2 && sent[0] == sent[1])  // the same attestation, sent again
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 2)
        let hashes = app.provider.attestationHashes(for: sent[0].keyId)
        #expect(hashes.count == 2 && hashes[0] == hashes[1])
        #expect(app.service.challenges("attest") == 1)
    }

    @Test(
        "a lost answer: the post again's challenge_consumed (challenge_not_found, key_exists) attests nothing again",
        arguments: [(409, "challenge_consumed"), (403, "challenge_not_found"), (409, "key_exists")])
    func answerLost(status: Int, code: String) async throws {
        let app = App()
        let appKey = P256.Signing.PrivateKey().publicKey.derRepresentation
        app.service.scriptKeyAttestations([.drop, .status(status, code)])
        let lost = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestAppKey(publicKeyDER: appKey)
        }
        #expect(lost?.code == .unavailable)
        let registered = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestAppKey(publicKeyDER: appKey)
        }
        #expect(registered?.code == .answerLost)
        let sent = app.service.keyAttestationRequests
        #expect(sent.count == 2 && sent[0] == sent[1])
        #expect(app.provider.calls.generateKey == 1 && app.provider.calls.attestKey == 1)
        #expect(app.service.challenges("attest") == 1)
    }

    @Test("a refusal for good starts over with a new key next time; a key that cannot be bound is refused")
    func refused() async throws {
        let app = App()
        let appKey = P256.Signing.PrivateKey().publicKey.derRepresentation
        app.service.scriptKeyAttestations([.status(403, "attestation_invalid")])
        let refused = await #expect(throws: AttestKitClientError.self) {
            try await app.manager.attestAppKey(publicKeyDER: appKey)
        }
        #expect(refused?.code == .httpError && refused?.serviceCode == "attestation_invalid")
        _ = try await app.manager.attestAppKey(publicKeyDER: appKey)
        let sent = app.service.keyAttestationRequests
        #expect(sent.count == 2 && sent[0].keyId != sent[1].keyId && sent[0].challengeId != sent[1].challengeId)

        // Keys the service would refuse (400 app_key_malformed), refused before the device attests anything: the
        // raw point, a P-384 key, a P-256 key with a byte more, a flipped byte of the point.
        var flipped = appKey
        flipped[flipped.count - 1] ^= 0x01
        let refusedByTheService = [
            P256.Signing.PrivateKey().publicKey.x963Representation,
            P384.Signing.PrivateKey().publicKey.derRepresentation, appKey + [0], flipped,
        ]
        for bad in [Data(), Data(count: KeyAttestationClientData.maximumAppKeyLength + 1)] + refusedByTheService {
            let error = await #expect(throws: AttestKitClientError.self) {
                try await app.manager.attestAppKey(publicKeyDER: bad)
            }
            #expect(error?.code == .invalidRequest)
        }
        #expect(app.provider.calls.attestKey == 2)
    }
}
