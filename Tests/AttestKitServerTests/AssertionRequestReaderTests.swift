import AttestKitFlows
import AttestKitWire
import Foundation
import Testing

@testable import AttestKitServer

/// The fast reader of assertion requests never reads a body differently from `JSONDecoder`: what it reads,
/// `JSONDecoder` reads the same; what it does not read it leaves to `JSONDecoder` (returns `nil`).
@Suite("Assertion request reader")
struct AssertionRequestReaderTests {
    /// Bodies as clients send them: raw client data, request parts with a timestamp or a challenge, a body or its hash.
    static let requests: [AssertionRequest] = [
        AssertionRequest(keyId: "a2V5LWlk+/=", assertion: "omlzaWduYXR1cmVYRzBFAiEA/+==", clientData: "Y2xpZW50"),
        AssertionRequest(
            keyId: "k", assertion: "AAAA",
            request: .init(method: "POST", target: "/v1/orders?id=7&x=%2F", body: "eyJhIjoxfQ==", timestamp: 1_800_000)),
        AssertionRequest(
            keyId: "k", assertion: "AAAA",
            request: .init(method: "GET", target: "/", bodySha256: String(repeating: "ab", count: 32)),
            challengeId: "Y2hhbGxlbmdl"),
        AssertionRequest(
            keyId: "k", assertion: "AAAA", request: .init(method: "DELETE", target: "/x", timestamp: -0)),
        AssertionRequest(
            keyId: "k", assertion: "AAAA", request: .init(method: "PUT", target: "/y", timestamp: Int64.max)),
    ]

    static func foundation(_ bytes: [UInt8]) -> AssertionRequest? {
        try? WireJSON.decode(AssertionRequest.self, from: Data(bytes))
    }

    /// What the reader gives must be what `JSONDecoder` gives.
    static func agree(_ bytes: [UInt8], _ comment: @autoclosure () -> String) {
        guard let read = AssertionRequestReader.read(bytes) else { return }
        #expect(read == foundation(bytes), "\(comment()): \(String(decoding: bytes, as: UTF8.self))")
    }

    @Test("bodies as JSONEncoder writes them, and with whitespace, are read as JSONDecoder reads them")
    func readsTheUsualShape() throws {
        for request in Self.requests {
            let compact = Array(try WireJSON.encode(request))
            #expect(AssertionRequestReader.read(compact) == request)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .withoutEscapingSlashes]
            let pretty = Array(try encoder.encode(request))
            #expect(AssertionRequestReader.read(pretty) == request)
            #expect(Self.foundation(pretty) == request)
        }
    }

    @Test("every truncation and every single-byte change of real bodies: read as JSONDecoder reads it, or left to it")
    func mutations() throws {
        let replacements = Array(#"{}[]",:0123456789-.eE+ \"\/nulltrueXyz"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xFF]
        for request in Self.requests {
            let bytes = Array(try WireJSON.encode(request))
            for end in 0..<bytes.count {
                #expect(AssertionRequestReader.read(Array(bytes[..<end])) == nil, "a truncation was read")
            }
            for index in bytes.indices {
                for replacement in replacements where replacement != bytes[index] {
                    var changed = bytes
                    changed[index] = replacement
                    Self.agree(changed, "byte \(index) changed")
                }
                var removed = bytes
                removed.remove(at: index)
                Self.agree(removed, "byte \(index) removed")
            }
        }
    }

    @Test(
        "bodies outside the shape are left to JSONDecoder",
        arguments: [
            #"{"keyId":"k","assertion":"A\u0041"}"#,
            #"{"keyId":"k","assertion":"A\/"}"#,
            #"{"keyId":"k","assertion":"AAAA","clientData":null}"#,
            #"{"keyId":"k","assertion":"AAAA","extra":"x"}"#,
            #"{"keyId":"k","keyId":"k","assertion":"AAAA"}"#,
            #"{"keyId":"k","assertion":"AAAA","request":{"method":"GET","target":"/","timestamp":1.0}}"#,
            #"{"keyId":"k","assertion":"AAAA","request":{"method":"GET","target":"/","timestamp":1e3}}"#,
            #"{"keyId":"k","assertion":"AAAA","request":{"method":"GET","target":"/","timestamp":0123}}"#,
            #"{"keyId":"k","assertion":"AAAA","request":{"method":"GET","target":"/","timestamp":"1"}}"#,
            #"{"keyId":"k","assertion":"AAAA","request":{"method":"GET","target":"/","timestamp":9223372036854775808}}"#,
            #"{"keyId":"k","assertion":"AAAA","request":{"method":"GET"}}"#,
            #"{"keyId":"k","assertion":"AAAA","request":{"method":"GET","target":"/","request":{}}}"#,
            #"{"keyId":"k","assertion":"AAAA","request":"x"}"#,
            #"{"keyId":"k","assertion":"ÄAAA"}"#,
            #"{"keyId":"k"}"#,
            #"{"keyId":"k","assertion":"AAAA",}"#,
            #"{"keyId":"k","assertion":"AAAA"} {}"#,
            #"{"keyId":"k","assertion":"AAAA"}x"#,
            "\u{FEFF}{\"keyId\":\"k\",\"assertion\":\"AAAA\"}",
            #"[{"keyId":"k","assertion":"AAAA"}]"#,
            "{}",
            "",
        ])
    func leftToJSONDecoder(_ body: String) {
        #expect(AssertionRequestReader.read(Array(body.utf8)) == nil)
    }
}
