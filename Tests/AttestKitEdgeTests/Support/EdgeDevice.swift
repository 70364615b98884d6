import AttestKit
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing

/// A simulated device of the app with a key registered through an edge's own routes (the wire messages).
struct EdgeDevice: Sendable {
    let device: SimulatedDevice
    let keyID: KeyID

    /// A new key, registered through `POST /v1/challenges` and `POST /v1/attestations` of `edge` (201 required), of
    /// a device running `build` (the app in development, before iOS 27, by default).
    static func registered(
        _ edge: any EdgeDriver,
        build: SimulatedDevice.Configuration = .init(appID: EdgeFixture.appID, environment: .development),
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> EdgeDevice {
        let device = SimulatedDevice(apple: EdgeFixture.apple, configuration: build)
        let keyID = device.generateKey()
        let issued = try await edge.post("/v1/challenges", ChallengeRequest(purpose: "attest"))
        let challenge = try #require(issued.decode(ChallengeResponse.self), "\(issued)", sourceLocation: sourceLocation)
        let bytes = try #require(Data(base64Encoded: challenge.challenge), sourceLocation: sourceLocation)
        let attestation = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
        let registered = try await edge.post(
            "/v1/attestations",
            AttestationRequest(
                keyId: keyID.base64, attestation: Data(attestation).base64EncodedString(),
                challengeId: challenge.challengeId))
        #expect(registered.status == 201, "\(registered)", sourceLocation: sourceLocation)
        let record = try #require(registered.decode(KeyRecordResponse.self), sourceLocation: sourceLocation)
        #expect(record.keyId == keyID.base64 && record.state == "active", sourceLocation: sourceLocation)
        return EdgeDevice(device: device, keyID: keyID)
    }

    /// The same key on the same device after its app was replaced by another build (``SimulatedDevice/updated(to:)``).
    func updated(_ change: (inout SimulatedDevice.Configuration) -> Void) -> EdgeDevice {
        var configuration = device.configuration
        change(&configuration)
        return EdgeDevice(device: device.updated(to: configuration), keyID: keyID)
    }

    /// The AttestKit headers of an assertion over `method`, `target` and `body`, fresh now.
    func headers(_ method: String, _ target: String, body: [UInt8]) throws -> [(String, String)] {
        let freshness = Freshness.timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1_000))
        let binding = try RequestBinding(method: method, target: target, body: body, freshness: freshness)
        let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
        var headers = [
            (AttestKitHeaderNames.keyID, keyID.base64),
            (AttestKitHeaderNames.assertion, Data(assertion).base64EncodedString()),
        ]
        if let header = AttestKitHeaderNames.header(of: freshness) { headers.append((header.name, header.value)) }
        return headers
    }
}
