import AttestKitWire
import Foundation
import Testing

/// The client data of a key attestation: the worked example of docs/key-attestation.md, strictness, and
/// sensitivity to every part.
@Suite struct KeyAttestationClientDataTests {
    /// The SubjectPublicKeyInfo DER of the P-256 key whose private scalar is the bytes 0x01...0x20 (computed
    /// independently with Python's `cryptography`).
    static let appKey = unhex(
        "3059301306072a8648ce3d020106082a8648ce3d03010703420004515c3d6eb9e396b904d3feca7f54fdcd0cc1e997bf375dca51"
            + "5ad0a6c3b4035f4536be3a50f318fbf9a5475902a221502bef0d57e08c53b2cc0a56f17d9f9354")
    static let challengeId = "Jx3kq0V9bT2mYc8rLw1pZA"

    static func unhex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return bytes
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The worked example of docs/key-attestation.md; the hash was computed independently (Python hashlib).
    @Test func workedExampleMatchesTheGuide() throws {
        #expect(Self.appKey.count == 91)
        let data = try KeyAttestationClientData(challengeId: Self.challengeId, appKey: Self.appKey)
        #expect(
            String(decoding: data.clientData, as: UTF8.self)
                == "attestkit-key-attestation-v1\nJx3kq0V9bT2mYc8rLw1pZA\n"
                + "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEUVw9brnjlrkE0_7Kf1T9zQzB6Ze_N13KUVrQpsO0A19FNr46UPMY-_mlR1kCoiFQK"
                + "-8NV-CMU7LMClbxfZ-TVA")
        #expect(data.clientData.count == 174)
        #expect(Self.hex(data.clientDataHash) == "d278325772550b7eb16de683362729dfdd7712bb261e61efbd7d2c8a7e39c1eb")
        let guide = try Self.guide()
        #expect(guide.contains(Self.hex(data.clientDataHash)))
        #expect(guide.contains(Self.hex(Self.appKey).prefix(64)))
        #expect(guide.contains(String(decoding: data.clientData, as: UTF8.self)))
    }

    /// docs/key-attestation.md, found from this file: Tests/AttestKitWireTests/ → ../../docs.
    static func guide() throws -> String {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("docs/key-attestation.md")
        return try String(contentsOf: url, encoding: .utf8)
    }

    @Test func parsingRoundTripsAndIsStrict() throws {
        let data = try KeyAttestationClientData(challengeId: Self.challengeId, appKey: Self.appKey)
        #expect(try KeyAttestationClientData(clientData: data.clientData) == data)
        var trailing = data.clientData
        trailing.append(0x0A)
        #expect(throws: RequestBindingError(.malformed)) { try KeyAttestationClientData(clientData: trailing) }
        let text = String(decoding: data.clientData, as: UTF8.self)
        for variant in [
            text.replacingOccurrences(of: "_", with: "/"),
            text.replacingOccurrences(of: "-TVA", with: "-TVA=="),
            text.replacingOccurrences(of: "-v1\n", with: "-v2\n"),
            text.replacingOccurrences(of: "\n", with: "\r\n"),
            " " + text,
        ] {
            #expect(throws: RequestBindingError.self) { try KeyAttestationClientData(clientData: Array(variant.utf8)) }
        }
        // A prefix either is not well formed, or (cut inside the key) names another, shorter key.
        for length in 0..<data.clientData.count {
            if let parsed = try? KeyAttestationClientData(clientData: data.clientData.prefix(length)) {
                #expect(parsed != data && parsed.clientDataHash != data.clientDataHash)
                #expect(parsed.appKey.count < Self.appKey.count)
            }
        }
    }

    @Test func everyPartChangesTheHash() throws {
        let reference = try KeyAttestationClientData(challengeId: Self.challengeId, appKey: Self.appKey)
        var otherKey = Self.appKey
        otherKey[90] ^= 1
        let variants = [
            try KeyAttestationClientData(challengeId: "Jx3kq0V9bT2mYc8rLw1pZB", appKey: Self.appKey),
            try KeyAttestationClientData(challengeId: Self.challengeId, appKey: otherKey),
            try KeyAttestationClientData(challengeId: Self.challengeId, appKey: Self.appKey.dropLast()),
        ]
        for variant in variants { #expect(variant.clientDataHash != reference.clientDataHash) }
    }

    @Test(arguments: ["", "a b", "a\nb", "a/b", "a=", "é", String(repeating: "a", count: 129)])
    func invalidChallengeIdsAreRefused(challengeId: String) {
        #expect(throws: RequestBindingError(.invalidFreshness)) {
            try KeyAttestationClientData(challengeId: challengeId, appKey: Self.appKey)
        }
    }

    @Test func emptyAndOversizedKeysAreRefused() throws {
        #expect(throws: RequestBindingError(.invalidAppKey)) {
            try KeyAttestationClientData(challengeId: Self.challengeId, appKey: [])
        }
        let longest = [UInt8](repeating: 0x30, count: KeyAttestationClientData.maximumAppKeyLength)
        let data = try KeyAttestationClientData(challengeId: String(repeating: "a", count: 128), appKey: longest)
        #expect(try KeyAttestationClientData(clientData: data.clientData) == data)
        #expect(throws: RequestBindingError(.invalidAppKey)) {
            try KeyAttestationClientData(challengeId: Self.challengeId, appKey: longest + [0x30])
        }
        let oversized = Array("attestkit-key-attestation-v1\na\n".utf8) + Array(Base64URL.encode(longest + [0x30]).utf8)
        #expect(throws: RequestBindingError.self) { try KeyAttestationClientData(clientData: oversized) }
    }

    @Test func base64URLIsStrict() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        for text in ["-_9", "+/8", "-_8=", "a", "-_8 "] { #expect(Base64URL.decode(Substring(text)) == nil) }
        #expect(Base64URL.decode("") == [])
    }
}
