import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing
import Vapor
import VaporTesting

@testable import VaporExample

/// The Vapor example with a simulated device: its key registered through the app's routes, then a note posted with
/// an assertion bound to the request; a replay, a tampered note and a request without headers refused.
@Suite("Vapor example")
struct NotesAppTests {
    @Test func aSimulatedDevicePostsANoteOnceAndTamperingIsRefused() async throws {
        let apple = try SoftwareApple(seed: Array("VaporExample".utf8))
        let appID = try AppID("ABCDE12345.com.example.notes")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = SQLiteAttestationStore(path: directory.appendingPathComponent("notes.sqlite").path)
        try await withApp(configure: { app in
            try NotesApp.configure(
                app, store: store,
                configuration: .init(appIDs: [appID], environments: .development, trustAnchors: apple.trustAnchors))
            try await app.asyncBoot()
        }) { app in
            let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
            let keyID = device.generateKey()

            // Register the key: a challenge, then the attestation of the key over SHA-256 of the challenge.
            var challenge: ChallengeResponse?
            try await app.testing().test(.POST, "/v1/challenges", body: try json(ChallengeRequest(purpose: "attest"))) {
                #expect($0.status == .created)
                challenge = try? WireJSON.decode(ChallengeResponse.self, from: Data($0.body.readableBytesView))
            }
            let issued = try #require(challenge)
            let attestation = try device.attestKey(
                keyID, clientDataHash: Array(SHA256.hash(data: try #require(Data(base64Encoded: issued.challenge)))))
            let registration = AttestationRequest(
                keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(),
                challengeId: issued.challengeId)
            try await app.testing().test(.POST, "/v1/attestations", body: try json(registration)) {
                #expect($0.status == .created)
            }

            // Post a note with an assertion bound to this request.
            let note = Array(#"{"text":"hello"}"#.utf8)
            let headers = try assertionHeaders(device, keyID, target: "/v1/notes", body: note)
            try await app.testing().test(
                .POST, "/v1/notes", headers: headers,
                body: ByteBuffer(bytes: note)
            ) {
                #expect($0.status == .ok)
                // The note reached the route intact, with the key the middleware verified and its first counter.
                let receipt = try? JSONDecoder().decode(NoteReceipt.self, from: Data($0.body.readableBytesView))
                #expect(
                    receipt?.keyId == keyID.base64 && receipt?.counter == 1 && receipt?.text == "hello",
                    "\(String(buffer: $0.body))")
            }
            // The same request again is a replay; another body under that assertion is not the signed request.
            try await app.testing().test(
                .POST, "/v1/notes", headers: headers,
                body: ByteBuffer(bytes: note)
            ) {
                #expect($0.status == .conflict)
            }
            let fresh = try assertionHeaders(device, keyID, target: "/v1/notes", body: note)
            try await app.testing().test(
                .POST, "/v1/notes", headers: fresh, body: ByteBuffer(string: #"{"text":"changed"}"#)
            ) {
                #expect($0.status == .forbidden)
            }
            try await app.testing().test(.POST, "/v1/notes", body: ByteBuffer(bytes: note)) {
                #expect($0.status == .unauthorized)
            }
        }
    }

    private func json(_ message: some Encodable) throws -> ByteBuffer {
        ByteBuffer(data: try WireJSON.encode(message))
    }

    private func assertionHeaders(
        _ device: SimulatedDevice, _ keyID: KeyID, target: String, body: [UInt8]
    ) throws -> HTTPHeaders {
        let freshness = Freshness.timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1_000))
        let binding = try RequestBinding(method: "POST", target: target, body: body, freshness: freshness)
        let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
        var headers: HTTPHeaders = [
            AttestKitHeaderNames.keyID: keyID.base64,
            AttestKitHeaderNames.assertion: Data(assertion).base64EncodedString(),
        ]
        if let header = AttestKitHeaderNames.header(of: freshness) {
            headers.add(name: header.name, value: header.value)
        }
        headers.add(name: "Content-Type", value: "application/json")
        return headers
    }
}
