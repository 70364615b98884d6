import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// Hostile input at every endpoint: broken JSON, wrong types, nulls, huge numbers, bad Base64, empty bodies, and
/// truncated or bit-flipped attestation and assertion objects. The answer is always a 4xx with an error code;
/// never a 5xx (the harness records any).
@Suite("Robustness")
struct RobustnessTests {
    /// Bodies no endpoint with required fields accepts.
    static let broken: [JSONValue] = [
        .raw(""), .raw(" "), .raw("{"), .raw("}"), .raw("[]"), .raw("null"), .raw("true"), .raw("\"text\""), .raw("42"),
        .raw("{\"keyId\":}"), .raw("{'keyId':'x'}"), .raw("{\"keyId\":\"a\",}"), .raw("{\"a\":1}{\"b\":2}"),
        .raw("\u{FEFF}{}"), .raw("{\"keyId\":\"\\ud800\"}"), .raw("{\"keyId\":\"\u{0}\"}"),
        .raw(String(repeating: "[", count: 5_000)),
        .object([]), ["keyId": nil], ["keyId": 1], ["keyId": []], ["keyId": .object([])], ["keyId": true],
        ["keyId": .number("1e400")], ["keyId": .number("-0")], ["deviceToken": nil], ["deviceToken": 12],
        ["deviceToken": .number("99999999999999999999999999999")], ["deviceToken": ""], ["deviceToken": "%%%%"],
        ["deviceToken": .string(String(repeating: "A", count: 12_000))], ["deviceToken": "A"],
    ]

    @Test("broken JSON and wrong fields at every POST endpoint", arguments: await StoreKind.all())
    func brokenBodies(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            var bodies = Self.broken.map { $0.bytes }
            bodies.append([0xFF, 0xFE, 0x00, 0x7B])  // not UTF-8
            bodies.append(Array(repeating: 0x20, count: 70_000))  // over the limit
            let paths = [
                "/v1/attestations", "/v1/assertions/verify", "/v1/devicecheck/query", "/v1/devicecheck/update",
                "/v1/devicecheck/validate",
            ]
            var sent = 0
            for path in paths {
                for body in bodies {
                    let answer = try await harness.send(.POST, path, body: body)
                    sent += 1
                    Self.expectRefused(answer, "\(path) \(String(decoding: body.prefix(60), as: UTF8.self))")
                }
            }
            // Challenges take an empty body, `{}` and unknown fields: those are 201, the rest refused.
            for body in Self.broken {
                let answer = try await harness.post("/v1/challenges", body)
                sent += 1
                if answer.status == 201 { continue }
                Self.expectRefused(answer, "challenges \(body.text.prefix(60))")
            }
            // Field-level nonsense in otherwise complete bodies.
            let attestation: JSONValue = [
                "keyId": .string(device.keyID.base64), "attestation": "o2NmbXRv",
                "challengeId": "AAAAAAAAAAAAAAAAAAAAAA",
            ]
            let verify = try device.verifyBody(freshness: device.now)
            let mutations: [(String, JSONValue, [JSONValue?])] = [
                (
                    "/v1/attestations", attestation,
                    [nil, .null, 1, "", "=", "====", "A===", "AB=C", "\u{1F600}", .array([]), .number("1e999")]
                ),
                (
                    "/v1/assertions/verify", verify,
                    [nil, .null, 1, "", "====", "ab\ncd", .bool(false), .number("-1"), .object([])]
                ),
            ]
            for (path, base, values) in mutations {
                guard case .object(let members) = base else { continue }
                for member in members {
                    for value in values {
                        let answer = try await harness.post(path, base.setting(member.key, value))
                        sent += 1
                        Self.expectRefused(answer, "\(path) \(member.key)=\(value?.text ?? "absent")")
                    }
                }
            }
            for key in ["request.method", "request.target", "request.body", "request.timestamp"] {
                for value: JSONValue? in [
                    nil, .null, 0, "", " ", .number("9223372036854775808"), .number("-9223372036854775809"),
                    .number("0.5"), "\u{0}",
                ] {
                    let answer = try await harness.post("/v1/assertions/verify", verify.setting(key, value))
                    sent += 1
                    Self.expectRefused(answer, "verify \(key)=\(value?.text ?? "absent")")
                }
            }
            // Admin paths with hostile key ids.
            for keyID in [
                "%ZZ", "%2F%2F", "..%2F..%2Fetc", String(repeating: "A", count: 5_000), "AAAA%00", "%F0%9F%98%80",
                device.keyID.base64URL + "x", device.keyID.base64URL + "==", "-", "_",
            ] {
                for (method, suffix) in [(HTTPMethod.GET, ""), (.POST, "/revoke")] {
                    let answer = try await harness.send(
                        method, "/v1/keys/\(keyID)\(suffix)", headers: ServerHarness.admin)
                    sent += 1
                    Self.expectRefused(answer, "\(method) /v1/keys/\(keyID.prefix(40))\(suffix)")
                }
            }
            #expect(sent > 250)
            // Nothing above registered or advanced anything.
            #expect(try await harness.store.key(device.keyID)?.counter == 0)
        }
    }

    @Test("truncated, bit-flipped and extended attestation objects", arguments: await StoreKind.all())
    func attestationMutations(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            var generator = SplitMix64(seed: 0xA77E57)
            let receiptRoot = Self.pemBody(Fixture.apple.receiptRootPEM)
            var ignored = 0
            for index in 0..<40 {
                let device = TestDevice(harness)
                let challenge = try await harness.challenge()
                let object = try device.attestation(for: challenge)
                let mutated = Self.mutate(object, index, using: &generator)
                let answer = try await harness.post(
                    "/v1/attestations", device.attestationBody(mutated, challengeID: challenge.id))
                guard answer.status == 201 else {
                    Self.expectRefused(answer, "attestation mutation \(index)")
                    continue
                }
                // The receipt's CMS carries a copy of the receipt root, which the verifier ignores (it trusts its
                // pinned anchor, not what the object brings): a change there is the only one that may pass.
                #expect(
                    Self.onlyChanges(object, to: mutated, within: receiptRoot),
                    "mutation \(index) of the attestation was accepted outside the receipt root's copy")
                ignored += 1
            }
            #expect(ignored < 15, "\(ignored) of 40 mutations went unnoticed")
        }
    }

    /// Whether `mutated` differs from `original` only in bytes of the first copy of `region` in `original`.
    static func onlyChanges(_ original: [UInt8], to mutated: [UInt8], within region: [UInt8]) -> Bool {
        guard original.count == mutated.count, let copy = range(of: region, in: original) else { return false }
        var changed = false
        for index in original.indices where original[index] != mutated[index] {
            guard copy.contains(index) else { return false }
            changed = true
        }
        return changed
    }

    /// The DER bytes of a PEM block.
    static func pemBody(_ pem: String) -> [UInt8] {
        let base64 = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        return Array(Data(base64Encoded: base64) ?? Data())
    }

    /// Where `needle` first occurs in `haystack`.
    static func range(of needle: [UInt8], in haystack: [UInt8]) -> Range<Int>? {
        guard !needle.isEmpty, needle.count <= haystack.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if haystack[start..<(start + needle.count)].elementsEqual(needle) { return start..<(start + needle.count) }
        }
        return nil
    }

    @Test("truncated, bit-flipped and extended assertion objects", arguments: await StoreKind.all())
    func assertionMutations(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let binding = try device.binding(body: [1, 2, 3], freshness: device.now)
            let assertion = try device.assertion(over: binding.clientData)
            var generator = SplitMix64(seed: 0x0A55E27)
            for index in 0..<40 {
                let mutated = Self.mutate(assertion, index, using: &generator)
                let body = TestDevice.verifyBody(
                    keyID: device.keyID, assertion: mutated, binding: binding, body: [1, 2, 3], form: .parts)
                let answer = try await device.verify(body)
                #expect(answer.status != 200, "assertion mutation \(index) was accepted")
                Self.expectRefused(answer, "assertion mutation \(index)")
            }
            // The original was never spent by its mutants.
            let original = try await device.verify(
                TestDevice.verifyBody(
                    keyID: device.keyID, assertion: assertion, binding: binding, body: [1, 2, 3], form: .parts))
            #expect(original.status == 200, "\(original)")
            // Client data mutated the same way: refused, or vouched for but then not signed.
            var clientDataGenerator = SplitMix64(seed: 0xC11E)
            for index in 0..<20 {
                let clientData = Self.mutate(binding.clientData, index, using: &clientDataGenerator)
                guard !clientData.isEmpty else { continue }
                let answer = try await device.verify(
                    [
                        "keyId": .string(device.keyID.base64), "assertion": .base64(assertion),
                        "clientData": .base64(clientData),
                    ])
                #expect(answer.status != 200, "client data mutation \(index) was accepted")
                Self.expectRefused(answer, "client data mutation \(index)")
            }
        }
    }

    /// The `index`-th mutation of `bytes`: truncations first, then single bit flips, then extensions and zeroed
    /// runs.
    static func mutate(_ bytes: [UInt8], _ index: Int, using generator: inout SplitMix64) -> [UInt8] {
        let count = bytes.count
        let cuts = [1, 2, 8, 37, count / 4, count / 2, (3 * count) / 4, count - 64, count - 8, count - 1]
        if index < cuts.count { return Array(bytes.prefix(max(1, min(count - 1, cuts[index])))) }
        var mutated = bytes
        switch index % 4 {
        case 0:
            mutated.append(contentsOf: [0x00])
        case 1:
            let start = Int.random(in: 0..<count, using: &generator)
            for position in start..<min(count, start + 8) { mutated[position] = 0 }
        default:
            let position = Int.random(in: 0..<count, using: &generator)
            mutated[position] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
        }
        return mutated
    }

    /// A 4xx with the error envelope.
    static func expectRefused(
        _ answer: HTTPResult, _ label: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            (400..<500).contains(answer.status) && answer.errorCode?.isEmpty == false,
            "\(label()): \(answer)", sourceLocation: sourceLocation)
    }
}
