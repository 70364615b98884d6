import AsyncHTTPClient
import AttestKit
import AttestKitTestSupport
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import NIOCore
import NIOHTTP1

/// JSON over HTTP to an `attestkit serve` child process (``ServeProcess``), for the tests that run the real binary:
/// bodies as text with the process's backend token, answers as a status and a JSON object.
enum ServeClient {
    /// An answer.
    struct Answer {
        let status: UInt
        let json: [String: Any]
        /// `error.code` of an error answer.
        var code: String? { (json["error"] as? [String: Any])?["code"] as? String }
    }

    /// POSTs `body` to `url`.
    static func post(
        _ client: HTTPClient, _ url: String, _ body: String, timeout: TimeAmount = .seconds(60)
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Authorization", value: ServeProcess.backendAuthorization)
        request.body = .bytes(ByteBuffer(string: body))
        let response = try await client.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 1 << 20)
        let json = (try? JSONSerialization.jsonObject(with: Data(bytes.readableBytesView))) as? [String: Any]
        return Answer(status: response.status.code, json: json ?? [:])
    }

    /// Attests `keyID` of `device` at `base`: an `attest` challenge, then `POST /v1/attestations` (201 when
    /// registered). Returns the answer and the attestation object.
    static func attest(
        _ client: HTTPClient, _ base: String, _ device: SimulatedDevice, _ keyID: KeyID
    ) async throws -> (answer: Answer, attestation: [UInt8]) {
        let challenge = try await post(client, base + "/v1/challenges", #"{"purpose":"attest"}"#)
        guard challenge.status == 201,
            let bytes = (challenge.json["challenge"] as? String).flatMap({ Data(base64Encoded: $0) }),
            let challengeID = challenge.json["challengeId"] as? String
        else { return (challenge, []) }
        let object = try device.attestKey(keyID, clientDataHash: Array(SHA256.hash(data: bytes)))
        let answer = try await post(
            client, base + "/v1/attestations",
            #"{"keyId":"\#(keyID.base64)","attestation":"\#(Data(object).base64EncodedString())","challengeId":"\#(challengeID)"}"#
        )
        return (answer, object)
    }

    /// A `/v1/assertions/verify` body: a new assertion of `keyID` over `POST /v1/orders` with a small body.
    static func assertion(
        _ device: SimulatedDevice, _ keyID: KeyID, freshness: Freshness, challengeID: String?
    ) throws -> String {
        let body = #"{"sku":"A-42"}"#
        let binding = try RequestBinding(
            method: "POST", target: "/v1/orders", body: Array(body.utf8), freshness: freshness)
        let assertion = try device.generateAssertion(keyID, clientDataHash: binding.clientDataHash)
        var request = #""method":"POST","target":"/v1/orders","body":"\#(Data(body.utf8).base64EncodedString())""#
        if case .timestamp(let milliseconds) = freshness { request += #","timestamp":\#(milliseconds)"# }
        let challenge = challengeID.map { #","challengeId":"\#($0)""# } ?? ""
        return
            #"{"keyId":"\#(keyID.base64)","assertion":"\#(Data(assertion).base64EncodedString())","request":{\#(request)}\#(challenge)}"#
    }

    /// The current time as `timestamp:` freshness.
    static var now: Freshness {
        .timestamp(milliseconds: Int64(Date().timeIntervalSince1970 * 1_000))
    }
}
