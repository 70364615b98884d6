import AttestKit
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

/// `POST /v1/attestations` with `clientData` (the challenge's bytes followed by the app's), on every edge and store:
/// registered with the app's bytes answered as `appData`, and the key then asserts; every other shape of client
/// data refused with its code.
@Suite("Attestation client data, every edge and store")
struct EdgeAttestationClientDataTests {
    static let appData = Array(#"{"user":"42"}"#.utf8)

    /// A fresh `attest` challenge of `edge`: its id and bytes.
    static func challenge(_ edge: any EdgeDriver) async throws -> (id: String, bytes: [UInt8]) {
        let issued = try await edge.post("/v1/challenges", ChallengeRequest(purpose: "attest"))
        let challenge = try #require(issued.decode(ChallengeResponse.self), "\(issued)")
        return (challenge.challengeId, Array(try #require(Data(base64Encoded: challenge.challenge))))
    }

    /// Posts the attestation of a new key of a new device over `attested`, with `clientData` (Base64 of `sent`,
    /// or `text` as it is).
    static func post(
        _ edge: any EdgeDriver, challengeID: String, attested: [UInt8], sent: [UInt8]?, text: String? = nil
    ) async throws -> (answer: EdgeAnswer, device: EdgeDevice) {
        let device = SimulatedDevice(
            apple: EdgeFixture.apple, configuration: .init(appID: EdgeFixture.appID, environment: .development))
        let keyID = device.generateKey()
        let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: attested)))
        let answer = try await edge.post(
            "/v1/attestations",
            AttestationRequest(
                keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(), challengeId: challengeID,
                clientData: text ?? sent.map { Data($0).base64EncodedString() }))
        return (answer, EdgeDevice(device: device, keyID: keyID))
    }

    @Test("the challenge and the app's bytes: 201 with appData, and the key asserts", arguments: await Edge.matrix())
    func accepted(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let challenge = try await Self.challenge(app)
            let clientData = try AttestationClientData(challenge: challenge.bytes, appData: Self.appData)
            let (answer, device) = try await Self.post(
                app, challengeID: challenge.id, attested: clientData.clientData, sent: clientData.clientData)
            #expect(answer.status == 201, "\(answer)")
            let record = try #require(answer.decode(KeyRecordResponse.self))
            #expect(record.keyId == device.keyID.base64 && record.state == "active")
            #expect(record.appData == Data(Self.appData).base64EncodedString())
            #expect(try await app.store.key(device.keyID) != nil)
            let body = Array("{}".utf8)
            let order = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: body), body: body)
            #expect(order.status == 200, "\(order)")
        }
    }

    @Test(
        "client data not beginning with the challenge: 403 client_data_challenge_mismatch",
        arguments: await Edge.matrix())
    func mismatch(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let other = try await Self.challenge(app)
            var variants: [(String, ([UInt8]) -> [UInt8])] = [
                ("the challenge after the app's bytes", { Self.appData + $0 }),
                // The app's bytes begin with `{`: after a challenge ending in `{` (1 in 256) the dropped byte would
                // come back, so a space goes first then.
                (
                    "a truncated challenge",
                    { Array($0.dropLast()) + ($0.last == Self.appData.first ? [0x20] : []) + Self.appData }
                ),
                ("another challenge", { _ in other.bytes + Self.appData }),
            ]
            for bit in 0..<(32 * 8) {
                variants.append(
                    (
                        "bit \(bit) flipped",
                        { challenge in
                            var flipped = challenge
                            flipped[bit / 8] ^= 1 << (bit % 8)
                            return flipped + Self.appData
                        }
                    ))
            }
            for (name, variant) in variants {
                let challenge = try await Self.challenge(app)
                let sent = variant(challenge.bytes)
                let (answer, device) = try await Self.post(app, challengeID: challenge.id, attested: sent, sent: sent)
                #expect(answer.status == 403 && answer.code == "client_data_challenge_mismatch", "\(name): \(answer)")
                #expect(try await app.store.key(device.keyID) == nil, "\(name)")
            }
        }
    }

    @Test(
        "malformed, empty or oversize client data: 400 invalid_field; other client data: 403 nonce_mismatch",
        arguments: await Edge.matrix())
    func refused(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let longest = AttestationClientData.maximumLength - 32
            let cases: [(String, ([UInt8]) -> (attested: [UInt8], sent: [UInt8]?, text: String?), Int, String)] = [
                ("no app bytes", { ($0, $0, nil) }, 400, "invalid_field"),
                ("empty", { ($0, nil, "") }, 400, "invalid_field"),
                ("not Base64", { ($0 + Self.appData, nil, "***") }, 400, "invalid_field"),
                (
                    "one byte over the limit",
                    {
                        (
                            $0 + [UInt8](repeating: 1, count: longest + 1),
                            $0 + [UInt8](repeating: 1, count: longest + 1), nil
                        )
                    },
                    400, "invalid_field"
                ),
                ("attested over the challenge alone", { ($0, $0 + Self.appData, nil) }, 403, "nonce_mismatch"),
                ("attested over other app bytes", { ($0 + [9], $0 + Self.appData, nil) }, 403, "nonce_mismatch"),
            ]
            for (name, make, status, code) in cases {
                let challenge = try await Self.challenge(app)
                let (attested, sent, text) = make(challenge.bytes)
                let (answer, device) = try await Self.post(
                    app, challengeID: challenge.id, attested: attested, sent: sent, text: text)
                #expect(answer.status == status && answer.code == code, "\(name): \(answer)")
                #expect(try await app.store.key(device.keyID) == nil, "\(name)")
            }
            // The longest client data registers.
            let challenge = try await Self.challenge(app)
            let sent = challenge.bytes + [UInt8](repeating: 1, count: longest)
            let (answer, _) = try await Self.post(app, challengeID: challenge.id, attested: sent, sent: sent)
            #expect(answer.status == 201, "\(answer)")
            #expect(answer.decode(KeyRecordResponse.self)?.appData?.count == (longest + 2) / 3 * 4)
        }
    }
}
