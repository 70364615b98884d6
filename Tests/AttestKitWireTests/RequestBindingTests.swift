import AttestKitWire
import Foundation
import Testing

/// The canonical client data: the worked example of docs/library.md, strictness, and sensitivity to every part.
@Suite struct RequestBindingTests {
    static let body = Array(#"{"sku":"A-42","quantity":1}"#.utf8)

    static func example() throws -> RequestBinding {
        try RequestBinding(
            method: "post", target: "/v1/orders?coupon=SPRING", body: body, freshness: .challenge("q0B6Hq3vJ7Qm1yZt"))
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The worked example of docs/library.md, with hashes computed independently (Python hashlib).
    @Test func workedExampleMatchesTheREADME() throws {
        let binding = try Self.example()
        #expect(
            String(decoding: binding.clientData, as: UTF8.self)
                == "attestkit-assertion-v1\nPOST\n/v1/orders?coupon=SPRING\n"
                + "13bc15628d04e4b408d0eb204ec3f7cfc0d0ac96e739ddf644c6bbc5f9f8ed1a\nchallenge:q0B6Hq3vJ7Qm1yZt")
        #expect(binding.clientData.count == 144)
        #expect(Self.hex(binding.clientDataHash) == "62761bf6cda33d43f8abad5e89a657ae3cadb62ea9a1b9693d370ea79be451df")
        let timestamped = try RequestBinding(
            method: "GET", target: "/v1/balance", body: [], freshness: .timestamp(milliseconds: 1_763_700_000_000))
        #expect(
            Self.hex(timestamped.clientDataHash) == "d97e2e2bf95b8fb7bc87411d82873f271158759d7db29c35b0895c9c78070a0d")
    }

    @Test func parsingRoundTripsAndIsStrict() throws {
        let binding = try Self.example()
        #expect(try RequestBinding(clientData: binding.clientData) == binding)
        var trailing = binding.clientData
        trailing.append(0x0A)
        #expect(throws: RequestBindingError(.malformed)) { try RequestBinding(clientData: trailing) }
        let upper = String(decoding: binding.clientData, as: UTF8.self).replacingOccurrences(of: "13bc", with: "13BC")
        #expect(throws: RequestBindingError(.malformed)) { try RequestBinding(clientData: Array(upper.utf8)) }
        // A prefix either is not canonical, or (cut inside the challenge id) names another challenge.
        for length in 0..<binding.clientData.count {
            if let parsed = try? RequestBinding(clientData: binding.clientData.prefix(length)) {
                #expect(parsed != binding && parsed.clientDataHash != binding.clientDataHash)
                #expect(length > binding.clientData.count - "q0B6Hq3vJ7Qm1yZt".count)
            }
        }
    }

    @Test func everyPartChangesTheHash() throws {
        let reference = try Self.example().clientDataHash
        let variants = [
            try RequestBinding(
                method: "PUT", target: "/v1/orders?coupon=SPRING", body: Self.body,
                freshness: .challenge("q0B6Hq3vJ7Qm1yZt")),
            try RequestBinding(
                method: "POST", target: "/v1/orders?coupon=SUMMER", body: Self.body,
                freshness: .challenge("q0B6Hq3vJ7Qm1yZt")),
            try RequestBinding(
                method: "POST", target: "/v1/orders?coupon=SPRING", body: Self.body + [0x20],
                freshness: .challenge("q0B6Hq3vJ7Qm1yZt")),
            try RequestBinding(
                method: "POST", target: "/v1/orders?coupon=SPRING", body: Self.body,
                freshness: .challenge("q0B6Hq3vJ7Qm1yZu")),
            try RequestBinding(
                method: "POST", target: "/v1/orders?coupon=SPRING", body: Self.body,
                freshness: .timestamp(milliseconds: 0)),
        ]
        for variant in variants { #expect(variant.clientDataHash != reference) }
    }

    @Test(arguments: ["", "P OST", "PÖST", "GET1", String(repeating: "A", count: 17)])
    func invalidMethodsAreRefused(method: String) {
        #expect(throws: RequestBindingError(.invalidMethod)) {
            try RequestBinding(method: method, target: "/", body: [], freshness: .timestamp(milliseconds: 1))
        }
    }

    @Test(arguments: ["", "v1/orders", "/a b", "/a\nb", "/a#frag", "/é", "/" + String(repeating: "a", count: 8192)])
    func invalidTargetsAreRefused(target: String) {
        #expect(throws: RequestBindingError(.invalidTarget)) {
            try RequestBinding(method: "GET", target: target, body: [], freshness: .timestamp(milliseconds: 1))
        }
    }

    @Test func invalidFreshnessIsRefused() {
        for freshness: Freshness in [
            .challenge(""), .challenge("a:b"), .challenge("x\ny"), .challenge(String(repeating: "a", count: 129)),
            .timestamp(milliseconds: -1), .vouchedByCaller,
        ] {
            #expect(throws: RequestBindingError(.invalidFreshness)) {
                try RequestBinding(method: "GET", target: "/", body: [], freshness: freshness)
            }
        }
    }
}
