import AttestKitWire
import Foundation
import Testing

/// Samples of every message of the API, each named by the schema of docs/openapi.yaml it must satisfy.
///
/// Here each sample must survive a round trip through its Swift type unchanged. With `ATTESTKIT_WIRE_SAMPLES` set
/// to a file path, the samples are also written there, and scripts/wire-check validates them against the OpenAPI
/// document's schemas, both ways: every sample is valid, and the fields of the samples of a schema are exactly the
/// properties the schema declares (so a field added on one side only fails the check).
@Suite("Wire samples")
struct WireSampleTests {
    private static let keyID = "bWFkZS11cCBrZXkgaWQgZm9yIHRoZSBleGFtcGxlcyE="
    private static let challengeID = "Jx3kq0V9bT2mYc8rLw1pZA"
    private static let time = APITime.format(Date(timeIntervalSince1970: 1_763_719_200.5))
    private static let later = APITime.format(Date(timeIntervalSince1970: 1_763_805_600))

    /// One sample: the schema it satisfies and its JSON, checked by a round trip through `Message`.
    struct Sample {
        let schema: String
        let json: Data
        let roundTrips: () throws -> Bool

        init<Message: Codable & Equatable>(_ schema: String, _ message: Message) throws {
            self.schema = schema
            let json = try WireJSON.encode(message)
            self.json = json
            roundTrips = { try WireJSON.decode(Message.self, from: json) == message }
        }
    }

    static func samples() throws -> [Sample] {
        let keyRecord = KeyRecordResponse(
            keyId: keyID, appId: "ABCDE12345.com.example.app", environment: "production", state: "active",
            counter: 0, createdAt: time, riskStatus: "unknown", stepUp: false)
        var adminRecord = keyRecord
        adminRecord.state = "revoked"
        adminRecord.counter = 7
        adminRecord.lastAssertionAt = later
        adminRecord.revokedAt = later
        adminRecord.osVersion = "18.2"
        adminRecord.bundleVersion = "42"
        adminRecord.validationCategory = 1
        adminRecord.receipt = .init(createdAt: time, refreshAt: later)
        adminRecord.riskMetric = 3
        adminRecord.riskStatus = "assessed"
        adminRecord.stepUp = true
        adminRecord.appKey = .init(thumbprint: "6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM")
        adminRecord.keyAccessControl = .init(
            policy: "macos_full_security",
            value: "MEajRARCMEAMAjExMDowCQwCb2uhAwEB/zAJDAJvYaEDAQH/MAsMBG9kZWyhAwEB/zAVDARvc2duoAYMBHJzZWMwBaYDAgEB")
        adminRecord.appData = "eyJ1c2VyIjoiNDIifQ=="
        let fullRecord = adminRecord
        var keyAttestation = keyRecord
        keyAttestation.appKey = .init(thumbprint: "6UoWwDCkLjV0J-pQG8c0THxbVhBcpR0AZDift1Yl5DM")
        var certified = fullRecord
        certified.appKey?.certificate = "MIIBkTCCATegAwIBAgIBATAKBggqhkjOPQQDAjAA"
        adminRecord.riskHistory = [.init(riskMetric: 3, receiptCreatedAt: time, recordedAt: later)]
        return try [
            Sample("ChallengeRequest", ChallengeRequest()),
            Sample("ChallengeRequest", ChallengeRequest(purpose: "assert", keyId: keyID)),
            Sample(
                "ChallengeRequest",
                ChallengeRequest(purpose: "attest", keyId: keyID, appId: "ABCDE12345.com.example.app")),
            Sample(
                "Challenge",
                ChallengeResponse(
                    challengeId: challengeID, challenge: "q83vASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4k=",
                    purpose: "attest", expiresAt: time)),
            Sample(
                "AttestationRequest", AttestationRequest(keyId: keyID, attestation: "AAEC", challengeId: challengeID)),
            Sample(
                "AttestationRequest",
                AttestationRequest(
                    keyId: keyID, attestation: "AAEC", challengeId: challengeID,
                    clientData: "q83vASNFZ4mrze8BI0VniavN7wEjRWeJq83vASNFZ4l7InVzZXIiOiI0MiJ9")),
            Sample(
                "KeyAttestationRequest",
                KeyAttestationRequest(
                    keyId: keyID, attestation: "AAEC", challengeId: challengeID,
                    appKey:
                        "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEUVw9brnjlrkE0/7Kf1T9zQzB6Ze/N13KUVrQpsO0A19FNr46UPMY+/mlR1"
                        + "kCoiFQK+8NV+CMU7LMClbxfZ+TVA==")),
            Sample("KeyAttestationResponse", keyAttestation),
            Sample("KeyAttestationResponse", certified),
            Sample("KeyRecord", keyRecord),
            Sample("KeyRecord", fullRecord),
            Sample("AdminKeyRecord", adminRecord),
            Sample("AssertionVerifyRequest", AssertionRequest(keyId: keyID, assertion: "AAEC", clientData: "AAEC")),
            Sample(
                "AssertionVerifyRequest",
                AssertionRequest(
                    keyId: keyID, assertion: "AAEC",
                    request: .init(method: "POST", target: "/v1/orders?coupon=SPRING", body: "e30="),
                    challengeId: challengeID)),
            Sample(
                "AssertionVerifyRequest",
                AssertionRequest(
                    keyId: keyID, assertion: "AAEC",
                    request: .init(
                        method: "GET", target: "/v1/orders/%2F",
                        bodySha256: String(repeating: "ab", count: 32), timestamp: 1_763_700_000_000))),
        ]
            + Freshness.Kind.allCases.map { kind in
                try Sample(
                    "AssertionVerifyResult",
                    AssertionResponse(
                        keyId: keyID, counter: 2, environment: "development",
                        riskMetric: kind == .challenge ? 5 : nil,
                        riskStatus: kind == .challenge ? "assessed" : "unknown",
                        stepUp: kind == .challenge, freshness: kind,
                        bundleVersion: kind == .challenge ? "2.10.1" : nil,
                        validationCategory: kind == .challenge ? 4 : nil,
                        validationCategoryChanged: kind == .challenge ? true : nil))
            }
            + [
                Sample(
                    "RequestVerificationRequest",
                    RequestVerificationRequest(
                        group: "payments", method: "POST", target: "/v1/orders?coupon=SPRING", body: "AAEC",
                        headers: [
                            AttestKitHeaderNames.keyID: keyID, AttestKitHeaderNames.assertion: "AAEC",
                            AttestKitHeaderNames.challenge: challengeID,
                        ], subject: "user-42", client: "203.0.113.7")),
                Sample(
                    "RequestVerificationRequest",
                    RequestVerificationRequest(
                        method: "GET", target: "/v1/feed", bodySha256: String(repeating: "ab", count: 32),
                        headers: [AttestKitHeaderNames.debugToken: "debug"])),
                Sample(
                    "RequestVerificationResult",
                    RequestVerificationResponse(
                        allowed: true, group: "payments", enforced: true, trust: "app_attest", keyId: keyID,
                        counter: 7, stepUp: false, bundleVersion: "2.10.1", validationCategory: 4)),
                Sample(
                    "RequestVerificationResult",
                    RequestVerificationResponse(
                        allowed: true, group: "payments", enforced: true, trust: "app_attest", keyId: keyID,
                        counter: 8, stepUp: true, bundleVersion: "2.10.1", validationCategory: 2,
                        validationCategoryChanged: true)),
                Sample(
                    "RequestVerificationResult",
                    RequestVerificationResponse(
                        allowed: false, group: "default", enforced: true, stepUp: false, status: 429, retryAfter: 2,
                        error: .init(code: "rate_limited", message: "slow down"))),
                Sample(
                    "RequestVerificationResult",
                    RequestVerificationResponse(
                        allowed: true, group: "feed", enforced: false, stepUp: true,
                        error: .init(code: "assertion_required", message: "no proof"))),
                Sample("DeviceTokenRequest", DeviceTokenRequest(deviceToken: "AAEC")),
                Sample(
                    "DeviceCheckUpdateRequest", DeviceCheckUpdateRequest(deviceToken: "AAEC", bit0: true, bit1: false)),
                Sample("DeviceCheckUpdateRequest", DeviceCheckUpdateRequest(deviceToken: "AAEC", state: "banned")),
                Sample("DeviceCheckQueryResult", DeviceCheckQueryResponse(found: false, bit0: false, bit1: false)),
                Sample(
                    "DeviceCheckQueryResult",
                    DeviceCheckQueryResponse(
                        found: true, bit0: true, bit1: false, lastUpdateTime: "2026-11", state: "trial_active")
                ),
                Sample("DeviceCheckUpdateResult", DeviceCheckUpdateResponse(updated: true)),
                Sample("DeviceTokenValidation", DeviceCheckValidateResponse(valid: true)),
                Sample("DeviceTokenValidation", DeviceCheckValidateResponse(valid: false, reason: "bad_device_token")),
                Sample("Error", ErrorResponse(code: "counter_not_increasing", message: "replayed")),
                Sample("TokenResponse", TokenResponse(token: "eyJh.eyJz.c2ln", expiresAt: Self.later)),
                Sample("TokenConsumeRequest", TokenConsumeRequest(token: "eyJh.eyJz.c2ln")),
                Sample(
                    "TokenClaims",
                    TokenClaims(
                        iss: "attestkit", aud: "orders", sub: "a2V5", iat: 1_790_000_000, exp: 1_790_003_600,
                        jti: "dG9rZW4", appId: "ABCDE12345.com.example.app", environment: "production",
                        riskMetric: 7, riskStatus: "assessed", stepUp: false, trust: "app_attest")),
                Sample(
                    "TokenClaims",
                    TokenClaims(
                        iss: "attestkit", aud: "orders", sub: "debug:q83vASNFZ4mrze8BI0VniQ", iat: 1_790_000_000,
                        exp: 1_790_003_600, jti: "dG9rZW4", appId: "ABCDE12345.com.example.app",
                        environment: "development", riskMetric: nil, riskStatus: "unknown", stepUp: true,
                        trust: "debug")),
                Sample("TokenIntrospectionRequest", TokenIntrospectionRequest(token: "eyJh.eyJz.c2ln")),
                Sample(
                    "TokenIntrospectionRequest",
                    TokenIntrospectionRequest(token: "MIIB", tokenTypeHint: TokenIntrospectionRequest.appKeyCertificate)
                ),
                Sample("TokenIntrospection", TokenIntrospectionResponse.inactive),
                Sample(
                    "TokenIntrospection",
                    TokenIntrospectionResponse(
                        claims: TokenClaims(
                            iss: "attestkit", aud: "orders", sub: "a2V5", iat: 1_790_000_000, exp: 1_790_000_900,
                            jti: "dG9rZW4", appId: "ABCDE12345.com.example.app", environment: "production",
                            riskMetric: 7, riskStatus: "assessed", stepUp: false, trust: "app_attest"))),
                Sample(
                    "TokenIntrospection",
                    TokenIntrospectionResponse(
                        certificateOf: "a2V5", appID: "ABCDE12345.com.example.app", environment: "development",
                        notBefore: 1_790_000_000, notAfter: 1_790_003_600, appKeyThumbprint: "dGh1bWI")),
                Sample(
                    "JSONWebKeySet",
                    JSONWebKeySet(keys: [
                        JSONWebKey(
                            kty: "EC", crv: "P-256", x: "eA", y: "eQ", kid: "a2lk", use: "sig", alg: "ES256")
                    ])),
            ]
    }

    @Test func everySampleRoundTripsAndIsWrittenForTheSchemaCheck() throws {
        let samples = try Self.samples()
        for sample in samples {
            #expect(try sample.roundTrips(), "\(sample.schema): \(String(decoding: sample.json, as: UTF8.self))")
        }
        guard let path = ProcessInfo.processInfo.environment["ATTESTKIT_WIRE_SAMPLES"] else { return }
        var document: [String] = []
        for sample in samples {
            document.append(
                #"{"schema":"\#(sample.schema)","instance":\#(String(decoding: sample.json, as: UTF8.self))}"#)
        }
        let headers = [
            AttestKitHeaderNames.keyID, AttestKitHeaderNames.assertion, AttestKitHeaderNames.challenge,
            AttestKitHeaderNames.timestamp, AttestKitHeaderNames.debugToken, AttestKitHeaderNames.deviceToken,
        ]
        let extras = try WireJSON.encode(
            Extras(
                headers: headers, freshness: Freshness.Kind.allCases.map(\.rawValue),
                timestamps: [Self.time, Self.later]))
        let text =
            #"{"samples":[\#(document.joined(separator: ","))],"extras":\#(String(decoding: extras, as: UTF8.self))}"#
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    /// What the check compares besides the messages: the header names, the freshness kinds, times.
    private struct Extras: Encodable {
        var headers: [String]
        var freshness: [String]
        var timestamps: [String]
    }
}
