import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// Refused assertions at `/v1/assertions/verify`, each with its status and code.
@Suite("Assertion errors")
struct AssertionErrorTests {
    @Test("unknown and revoked keys, replays, tampering, another app", arguments: await StoreKind.all())
    func refusals(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            // A key attested on the device but never registered.
            let unregistered = TestDevice(harness)
            _ = try unregistered.attestation(for: try await harness.challenge())
            let unknown = try await unregistered.verify(try unregistered.verifyBody(freshness: unregistered.now))
            #expect(unknown.status == 403 && unknown.errorCode == "key_not_found", "\(unknown)")

            let device = try await TestDevice.registered(harness)

            // Replay: the same body twice, with a timestamp and with a challenge.
            for freshness in [device.now, try await device.assertChallenge()] {
                let body = try device.verifyBody(freshness: freshness)
                let first = try await device.verify(body)
                #expect(first.status == 200, "\(first)")
                let replay = try await device.verify(body)
                #expect(replay.status == 409 && replay.errorCode == "counter_not_increasing", "\(replay)")
            }
            // A counter the device repeats.
            let reused = try await device.verify(try device.verifyBody(freshness: device.now, fault: .reusedCounter))
            #expect(reused.status == 409 && reused.errorCode == "counter_not_increasing", "\(reused)")

            // Tampering: the assertion was made for another body, method, target or time.
            let binding = try device.binding(body: Array("{\"amount\":1}".utf8), freshness: device.now)
            let assertion = try device.assertion(over: binding.clientData)
            for (label, forged) in [
                (
                    "body",
                    try RequestBinding(
                        method: "POST", target: "/v1/orders", body: Array("{\"amount\":1000}".utf8),
                        freshness: binding.freshness)
                ),
                (
                    "method",
                    try RequestBinding(
                        method: "PUT", target: "/v1/orders", bodySHA256: binding.bodySHA256,
                        freshness: binding.freshness)
                ),
                (
                    "target",
                    try RequestBinding(
                        method: "POST", target: "/v1/orders?x=1", bodySHA256: binding.bodySHA256,
                        freshness: binding.freshness)
                ),
                (
                    "time",
                    try RequestBinding(
                        method: "POST", target: "/v1/orders", bodySHA256: binding.bodySHA256,
                        freshness: .timestamp(milliseconds: harness.clock.milliseconds + 1))
                ),
            ] {
                for form in TestDevice.Form.allCases {
                    let body = TestDevice.verifyBody(
                        keyID: device.keyID, assertion: assertion, binding: forged,
                        body: label == "body" ? Array("{\"amount\":1000}".utf8) : Array("{\"amount\":1}".utf8),
                        form: form)
                    let answer = try await device.verify(body)
                    #expect(
                        answer.status == 403 && answer.errorCode == "signature_invalid", "\(label) \(form): \(answer)")
                }
            }
            // The untampered request still passes: refusals do not advance the counter.
            let genuine = try await device.verify(
                TestDevice.verifyBody(
                    keyID: device.keyID, assertion: assertion, binding: binding, body: Array("{\"amount\":1}".utf8),
                    form: .parts))
            #expect(genuine.status == 200, "\(genuine)")

            // An assertion signed for another app's rpIdHash.
            let otherApp = try await device.verify(try device.verifyBody(freshness: device.now, fault: .wrongAppID))
            #expect(otherApp.status == 403 && otherApp.errorCode == "app_id_mismatch", "\(otherApp)")
            // The assertion of another key.
            let other = try await TestDevice.registered(harness)
            let stolen = try other.verifyBody(freshness: other.now)
            let swapped = stolen.setting("keyId", .string(device.keyID.base64))
            let swappedAnswer = try await device.verify(swapped)
            #expect(swappedAnswer.status == 403 && swappedAnswer.errorCode == "signature_invalid", "\(swappedAnswer)")

            // Revoked.
            _ = try await harness.post(
                "/v1/keys/\(device.keyID.pathComponent)/revoke", .raw(""), headers: ServerHarness.admin)
            let revoked = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(revoked.status == 403 && revoked.errorCode == "key_revoked", "\(revoked)")
        }
    }

    @Test("timestamps outside the window, challenges that do not exist", arguments: await StoreKind.all())
    func freshness(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.timestampWindow = 60
        try await ServerHarness.with(kind, options) { harness in
            let device = try await TestDevice.registered(harness)
            let now = harness.clock.milliseconds
            for offset in [-61_000, 61_000, -86_400_000] as [Int64] {
                for form in [TestDevice.Form.parts, .clientData] {
                    let answer = try await device.verify(
                        try device.verifyBody(freshness: .timestamp(milliseconds: now + offset), form: form))
                    #expect(
                        answer.status == 403 && answer.errorCode == "timestamp_outside_window",
                        "\(offset) \(form): \(answer)")
                }
            }
            for offset in [-60_000, 60_000] as [Int64] {
                let answer = try await device.verify(
                    try device.verifyBody(freshness: .timestamp(milliseconds: now + offset)))
                #expect(answer.status == 200, "\(offset): \(answer)")
            }
            let huge = try await device.verify(try device.verifyBody(freshness: .timestamp(milliseconds: .max)))
            #expect(huge.status == 403 && huge.errorCode == "timestamp_outside_window", "\(huge)")

            for form in [TestDevice.Form.parts, .clientData] {
                let answer = try await device.verify(
                    try device.verifyBody(freshness: .challenge("AAAAAAAAAAAAAAAAAAAAAA"), form: form))
                #expect(answer.status == 403 && answer.errorCode == "challenge_not_found", "\(form): \(answer)")
            }
            // Canonical client data naming a challenge id this service never issues.
            let foreign = try await device.verify(
                try device.verifyBody(freshness: .challenge("not-one-of-ours"), form: .clientData))
            #expect(foreign.status == 400 && foreign.errorCode == "invalid_freshness", "\(foreign)")
        }
    }

    @Test("malformed verify requests are 400 with a code", arguments: await StoreKind.all())
    func malformed(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let challenge = try await harness.challenge(purpose: "assert", keyID: device.keyID)
            let valid = try device.verifyBody(freshness: device.now)
            let cases: [(JSONValue, String)] = [
                (valid.setting("assertion", "AAAA"), "assertion_malformed|cbor_malformed"),
                (valid.setting("assertion", "!!"), "invalid_field"),
                (valid.setting("keyId", "AAAA"), "key_id_malformed"),
                (valid.setting("request.method", "P0ST"), "invalid_method"),
                (valid.setting("request.method", ""), "invalid_method"),
                (valid.setting("request.method", "ß"), "invalid_method"),  // not upper-cased into SS
                (valid.setting("request.method", "ﬀ"), "invalid_method"),
                (valid.setting("request.target", "orders"), "invalid_target"),
                (valid.setting("request.target", "/orders#top"), "invalid_target"),
                (valid.setting("request.timestamp", -1), "invalid_freshness"),
                (valid.setting("request.bodySha256", "00"), "invalid_field"),
                (valid.setting("request.body", nil).setting("request.bodySha256", "zz"), "invalid_field"),
                (valid.setting("challengeId", .string(challenge.id)), "invalid_field"),
                (valid.setting("request.timestamp", nil), "invalid_field"),
                (valid.setting("challengeId", "nope"), "invalid_field"),
                (valid.setting("clientData", "AAAA"), "invalid_field"),
                (valid.setting("request", nil), "invalid_field"),
                (valid.setting("request", "GET /"), "invalid_json"),
                (valid.setting("request.timestamp", "1"), "invalid_json"),
                (valid.setting("request.timestamp", .number("1e400")), "invalid_json"),
                (valid.setting("request.timestamp", .number("99999999999999999999999")), "invalid_json"),
            ]
            for (body, code) in cases {
                let answer = try await device.verify(body)
                let codes = code.split(separator: "|").map(String.init)
                #expect(answer.status == 400 && codes.contains(answer.errorCode ?? ""), "\(body.text): \(answer)")
            }
            // Raw client data with a challenge id beside it that differs from the one it names.
            let other = try await harness.challenge(purpose: "assert", keyID: device.keyID)
            let clientData = try device.verifyBody(freshness: .challenge(challenge.id), form: .clientData)
            let differs = try await device.verify(clientData.setting("challengeId", .string(other.id)))
            #expect(differs.status == 400 && differs.errorCode == "invalid_field", "\(differs)")
            let same = try await device.verify(clientData.setting("challengeId", .string(challenge.id)))
            #expect(same.status == 200, "\(same)")
        }
    }
}
