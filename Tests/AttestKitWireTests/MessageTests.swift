import AttestKitWire
import Foundation
import Testing

/// The messages write the bytes the API has always written (field names, sorted keys, absent optionals), and read
/// what clients send.
@Suite("Wire messages")
struct MessageTests {
    private static func text(_ message: some Encodable) throws -> String {
        String(decoding: try WireJSON.encode(message), as: UTF8.self)
    }

    @Test func answersEncodeWithTheirFieldNamesSortedAndOptionalsAbsent() throws {
        #expect(
            try Self.text(
                ChallengeResponse(
                    challengeId: "Jx3kq0V9bT2mYc8rLw1pZA", challenge: "q83v/A==", purpose: "attest",
                    expiresAt: "2026-11-21T10:00:00.000Z"))
                == #"{"challenge":"q83v/A==","challengeId":"Jx3kq0V9bT2mYc8rLw1pZA","expiresAt":"2026-11-21T10:00:00.000Z","purpose":"attest"}"#
        )
        #expect(
            try Self.text(
                AssertionResponse(
                    keyId: "k", counter: 3, environment: "production", riskStatus: "unknown", stepUp: false,
                    freshness: .vouched))
                == #"{"counter":3,"environment":"production","freshness":"vouched","keyId":"k","riskStatus":"unknown","stepUp":false}"#
        )
        #expect(
            try Self.text(
                KeyRecordResponse(
                    keyId: "k", appId: "T.a", environment: "development", state: "active", counter: 0,
                    createdAt: "t", receipt: .init(createdAt: "r"), riskMetric: 4, riskStatus: "assessed",
                    stepUp: true, riskHistory: [.init(riskMetric: 4, receiptCreatedAt: "r", recordedAt: "s")]))
                == #"{"appId":"T.a","counter":0,"createdAt":"t","environment":"development","keyId":"k","receipt":{"createdAt":"r"},"riskHistory":[{"receiptCreatedAt":"r","recordedAt":"s","riskMetric":4}],"riskMetric":4,"riskStatus":"assessed","state":"active","stepUp":true}"#
        )
        #expect(try Self.text(DeviceCheckValidateResponse(valid: true)) == #"{"valid":true}"#)
        #expect(
            try Self.text(DeviceCheckQueryResponse(found: false, bit0: false, bit1: true))
                == #"{"bit0":false,"bit1":true,"found":false}"#)
        #expect(try Self.text(DeviceCheckUpdateResponse(updated: true)) == #"{"updated":true}"#)
    }

    @Test func theErrorEnvelopeIsTheAPIs() throws {
        let envelope = ErrorResponse(code: "counter_not_increasing", message: "a \"replay\" of /v1")
        #expect(
            String(decoding: envelope.json, as: UTF8.self)
                == #"{"error":{"code":"counter_not_increasing","message":"a \"replay\" of /v1"}}"#)
        #expect(try WireJSON.decode(ErrorResponse.self, from: envelope.json) == envelope)
    }

    @Test func requestsDecodeWhatClientsSendAndRefuseWhatTheyMiss() throws {
        let verify = try WireJSON.decode(
            AssertionRequest.self,
            from: Data(
                #"{"keyId":"k","assertion":"a","request":{"method":"POST","target":"/o?x=%2F","timestamp":17},"extra":1}"#
                    .utf8))
        #expect(
            verify
                == AssertionRequest(
                    keyId: "k", assertion: "a",
                    request: .init(method: "POST", target: "/o?x=%2F", timestamp: 17)))
        #expect(try WireJSON.decode(ChallengeRequest.self, from: Data("{}".utf8)) == ChallengeRequest())
        #expect(throws: DecodingError.self) {
            try WireJSON.decode(AttestationRequest.self, from: Data(#"{"keyId":"k","attestation":"a"}"#.utf8))
        }
        #expect(throws: DecodingError.self) {
            try WireJSON.decode(DeviceCheckUpdateRequest.self, from: Data(#"{"deviceToken":"t","bit0":"yes"}"#.utf8))
        }
        let update = DeviceCheckUpdateRequest(deviceToken: "t", state: "banned")
        #expect(try WireJSON.decode(DeviceCheckUpdateRequest.self, from: WireJSON.encode(update)) == update)
    }

    @Test func keyAttestationMessagesHaveTheirBytes() throws {
        let request = try WireJSON.decode(
            KeyAttestationRequest.self,
            from: Data(#"{"keyId":"k","attestation":"a","challengeId":"c","appKey":"MFkw","extra":1}"#.utf8))
        #expect(request == KeyAttestationRequest(keyId: "k", attestation: "a", challengeId: "c", appKey: "MFkw"))
        #expect(
            try Self.text(request) == #"{"appKey":"MFkw","attestation":"a","challengeId":"c","keyId":"k"}"#)
        #expect(throws: DecodingError.self) {
            try WireJSON.decode(
                KeyAttestationRequest.self, from: Data(#"{"keyId":"k","attestation":"a","challengeId":"c"}"#.utf8))
        }
        let answer: KeyAttestationResponse = KeyRecordResponse(
            keyId: "k", appId: "T.a", environment: "production", state: "active", counter: 0, createdAt: "t",
            riskStatus: "unknown", stepUp: false, appKey: .init(thumbprint: "6UoW", certificate: "MIIB"))
        #expect(
            try Self.text(answer)
                == #"{"appId":"T.a","appKey":{"certificate":"MIIB","thumbprint":"6UoW"},"counter":0,"createdAt":"t","environment":"production","keyId":"k","riskStatus":"unknown","state":"active","stepUp":false}"#
        )
        var shown = answer
        shown.appKey?.certificate = nil
        #expect(try Self.text(shown).contains(#""appKey":{"thumbprint":"6UoW"},"#))
        #expect(try WireJSON.decode(KeyAttestationResponse.self, from: WireJSON.encode(answer)) == answer)
    }

    @Test func freshnessKindsAndHeaders() throws {
        #expect(Freshness.challenge("c").kind == .challenge)
        #expect(Freshness.timestamp(milliseconds: 5).kind == .timestamp)
        #expect(Freshness.vouchedByCaller.kind == .vouched)
        #expect(Freshness.Kind.allCases.map(\.rawValue) == ["challenge", "timestamp", "vouched"])
        #expect(AttestKitHeaderNames.header(of: .challenge("c"))?.name == AttestKitHeaderNames.challenge)
        #expect(AttestKitHeaderNames.header(of: .timestamp(milliseconds: 42))?.value == "42")
        #expect(AttestKitHeaderNames.header(of: .vouchedByCaller) == nil)
    }

    @Test func apiTimeIsUTCWithMillisecondsAndRoundTrips() throws {
        let date = Date(timeIntervalSince1970: 1_763_719_200.125)
        #expect(APITime.format(date) == "2025-11-21T10:00:00.125Z")
        let parsed = try #require(APITime.parse("2025-11-21T10:00:00.125Z"))
        #expect(abs(parsed.timeIntervalSince(date)) < 0.001)
        #expect(APITime.parse("2025-11-21 10:00:00") == nil)
    }
}
