import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing

@testable import HummingbirdExample

/// The Hummingbird example, live on a socket with its store and services, with a simulated device: its key
/// registered through the app's routes, then a note posted with an assertion bound to the request; a replay, a
/// tampered note and a request without headers refused, and a signed note over the configured `http.body-limit`
/// refused (the route's middleware is the server's configured one, not `AttestKitMiddleware(gate:)`'s defaults).
@Suite("Hummingbird example")
struct NotesAppTests {
    @Test func aSimulatedDevicePostsANoteOnceAndTamperingIsRefused() async throws {
        let apple = try SoftwareApple(seed: Array("HummingbirdExample".utf8))
        let appID = try AppID("ABCDE12345.com.example.notes")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("notes.sqlite").path
        let store = SQLiteAttestationStore(path: path)
        let attestKit = try AttestKitServer(
            configuration: ServerConfiguration(
                appIDs: [appID], environments: .development, storageURL: "sqlite:\(path)",
                // 16 KiB: room for an attestation (about 8 KiB of JSON), below the 64 KiB a bare middleware takes.
                trustAnchors: apple.trustAnchors, bodyLimit: 16_384, logLevel: .critical),
            store: store, logger: Logger(label: "example", factory: { _ in SwiftLogNoOpLogHandler() }))
        let app = try NotesApp.build(attestKit: attestKit, store: store, port: 0)
        try await app.test(.live) { client in
            let device = SimulatedDevice(apple: apple, configuration: .init(appID: appID, environment: .development))
            let keyID = device.generateKey()

            // Register the key: a challenge, then the attestation of the key over SHA-256 of the challenge.
            let issued = try await client.execute(
                uri: "/v1/challenges", method: .post, body: try json(ChallengeRequest(purpose: "attest"))
            ) { response in
                #expect(response.status == .created)
                return try WireJSON.decode(ChallengeResponse.self, from: Data(response.body.readableBytesView))
            }
            let attestation = try device.attestKey(
                keyID, clientDataHash: Array(SHA256.hash(data: try #require(Data(base64Encoded: issued.challenge)))))
            let registration = AttestationRequest(
                keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(),
                challengeId: issued.challengeId)
            try await client.execute(uri: "/v1/attestations", method: .post, body: try json(registration)) {
                #expect($0.status == .created)
            }

            // Post a note with an assertion bound to this request.
            let note = Array(#"{"text":"hello"}"#.utf8)
            let headers = try assertionHeaders(device, keyID, target: "/v1/notes", body: note)
            try await client.execute(uri: "/v1/notes", method: .post, headers: headers, body: ByteBuffer(bytes: note)) {
                #expect($0.status == .ok)
                // The note reached the route intact, with the key the middleware verified and its first counter.
                let receipt = try? JSONDecoder().decode(NoteReceipt.self, from: Data($0.body.readableBytesView))
                #expect(
                    receipt?.keyId == keyID.base64 && receipt?.counter == 1 && receipt?.text == "hello",
                    "\(String(buffer: $0.body))")
            }
            // The same request again is a replay; another body under that assertion is not the signed request.
            try await client.execute(uri: "/v1/notes", method: .post, headers: headers, body: ByteBuffer(bytes: note)) {
                #expect($0.status == .conflict)
            }
            let fresh = try assertionHeaders(device, keyID, target: "/v1/notes", body: note)
            try await client.execute(
                uri: "/v1/notes", method: .post, headers: fresh, body: ByteBuffer(string: #"{"text":"changed"}"#)
            ) {
                #expect($0.status == .forbidden)
            }
            try await client.execute(uri: "/v1/notes", method: .post, body: ByteBuffer(bytes: note)) {
                #expect($0.status == .unauthorized)
            }
            // The middleware follows the server's configuration: a signed note over its `http.body-limit` (16 KiB
            // here) is refused before verification, 413; `AttestKitMiddleware(gate:)` would hash up to 64 KiB and
            // accept it.
            let large = Array(("{\"text\":\"" + String(repeating: "x", count: 20_000) + "\"}").utf8)
            let signed = try assertionHeaders(device, keyID, target: "/v1/notes", body: large)
            try await client.execute(uri: "/v1/notes", method: .post, headers: signed, body: ByteBuffer(bytes: large)) {
                let answer = String(buffer: $0.body)
                #expect($0.status.code == 413 && answer.contains("payload_too_large"), "\(answer)")
            }
        }
    }

    private func json(_ message: some Encodable) throws -> ByteBuffer {
        ByteBuffer(data: try WireJSON.encode(message))
    }

    private func assertionHeaders(
        _ device: SimulatedDevice, _ keyID: KeyID, target: String, body: [UInt8]
    ) throws -> HTTPFields {
        let freshness = Freshness.timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1_000))
        let binding = try RequestBinding(method: "POST", target: target, body: body, freshness: freshness)
        let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
        var headers = HTTPFields()
        let pairs = [
            (AttestKitHeaderNames.keyID, keyID.base64),
            (AttestKitHeaderNames.assertion, Data(assertion).base64EncodedString()),
        ]
        for (name, value) in pairs + (AttestKitHeaderNames.header(of: freshness).map { [($0.name, $0.value)] } ?? []) {
            if let name = HTTPField.Name(name) { headers.append(HTTPField(name: name, value: value)) }
        }
        headers[.contentType] = "application/json"
        return headers
    }
}
