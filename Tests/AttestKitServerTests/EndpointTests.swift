import AttestKit
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// Every endpoint's success path, through the server's router, on SQLite and PostgreSQL.
@Suite("Endpoints")
struct EndpointTests {
    @Test("challenges: attest by default, assert, assert bound to a key", arguments: await StoreKind.all())
    func challenges(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let expires = TestClock.apiText(harness.clock.now().addingTimeInterval(300))
            for body in [JSONValue.raw(""), .object([]), ["purpose": "attest"]] {
                let answer = try await harness.post("/v1/challenges", body)
                #expect(answer.status == 201, "\(answer)")
                #expect(answer.string("purpose") == "attest")
                #expect(answer.string("challengeId")?.utf8.count == 22)
                #expect(answer.string("challenge").flatMap { Data(base64Encoded: $0) }?.count == 32)
                #expect(answer.string("expiresAt") == expires)
                #expect(answer.header("Content-Type")?.hasPrefix("application/json") == true)
            }
            let assert = try await harness.challenge(purpose: "assert")
            #expect(assert.purpose == "assert")
            let device = try await TestDevice.registered(harness)
            let bound = try await harness.challenge(purpose: "assert", keyID: device.keyID)
            #expect(bound.purpose == "assert")
            #expect(bound.id != assert.id)
            // The bound challenge is good for its key.
            let answer = try await device.verify(try device.verifyBody(freshness: .challenge(bound.id)))
            #expect(answer.status == 200, "\(answer)")
        }
    }

    @Test("an attestation registers the key: 201 with the key record", arguments: await StoreKind.all())
    func attestation(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = TestDevice(harness)
            let answer = try await device.register()
            #expect(answer.status == 201, "\(answer)")
            let now = TestClock.apiText(harness.clock.now())
            #expect(answer.string("keyId") == device.keyID.base64)
            #expect(answer.string("appId") == Fixture.appID.description)
            #expect(answer.string("environment") == "development")
            #expect(answer.string("state") == "active")
            #expect(answer.int("counter") == 0)
            #expect(answer.string("createdAt") == now)
            #expect(answer.string("osVersion") == "18.5")
            #expect(answer.string("receipt.createdAt") == now)
            #expect(answer.bool("stepUp") == false)
            #expect(!answer.has("lastAssertionAt") && !answer.has("revokedAt") && !answer.has("riskHistory"))

            // iOS 27: bundle version and validation category come from the authenticator data extensions.
            let modern = TestDevice(
                harness,
                configuration: .init(
                    appID: Fixture.appID, environment: .development, iOS27: true, bundleVersion: "42",
                    validationCategory: 3))
            let record = try await modern.register()
            #expect(record.status == 201, "\(record)")
            #expect(record.string("osVersion") == "27.0")
            #expect(record.string("bundleVersion") == "42")
            #expect(record.int("validationCategory") == 3)
        }
    }

    @Test(
        "assertions verify from request parts with a challenge or a timestamp, and from raw client data",
        arguments: await StoreKind.all())
    func assertions(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            var expected = 0
            for form in TestDevice.Form.allCases {
                for useChallenge in [true, false] {
                    let freshness = useChallenge ? try await device.assertChallenge() : device.now
                    let answer = try await device.verify(try device.verifyBody(freshness: freshness, form: form))
                    expected += 1
                    #expect(answer.status == 200, "\(form) challenge=\(useChallenge): \(answer)")
                    #expect(answer.int("counter") == expected)
                    #expect(answer.string("keyId") == device.keyID.base64)
                    #expect(answer.string("environment") == "development")
                    #expect(answer.bool("stepUp") == false)
                }
            }
            // A GET without a body, and a challenge from an unbound assert challenge.
            let unbound = try await harness.challenge(purpose: "assert")
            let get = try await device.verify(
                try device.verifyBody(
                    method: "GET", target: "/v1/orders?page=2&sort=new", body: [], freshness: .challenge(unbound.id)))
            #expect(get.status == 200, "\(get)")
            #expect(get.int("counter") == expected + 1)
            // Client data that is not AttestKit's canonical form: the caller vouches for freshness.
            let opaque = Array("my app's own client data \(UUID())".utf8)
            let assertion = try device.assertion(over: opaque)
            let vouched = try await device.verify(
                ["keyId": .string(device.keyID.base64), "assertion": .base64(assertion), "clientData": .base64(opaque)])
            #expect(vouched.status == 200, "\(vouched)")
            #expect(vouched.int("counter") == expected + 2)

            let record = try await harness.get("/v1/keys/\(device.keyID.pathComponent)", headers: ServerHarness.admin)
            #expect(record.int("counter") == expected + 2)
            #expect(record.string("lastAssertionAt") == TestClock.apiText(harness.clock.now()))
        }
    }

    @Test("DeviceCheck: query, update, query, validate", arguments: await StoreKind.all())
    func deviceCheck(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let token = Fixture.deviceToken()
            let before = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            #expect(before.status == 200, "\(before)")
            #expect(before.bool("found") == false)
            #expect(before.bool("bit0") == false && before.bool("bit1") == false)
            #expect(!before.has("lastUpdateTime"))

            let update = try await harness.post(
                "/v1/devicecheck/update", ["deviceToken": .string(token), "bit0": true])
            #expect(update.status == 200, "\(update)")
            #expect(update.bool("updated") == true)

            let after = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            #expect(after.status == 200, "\(after)")
            #expect(after.bool("found") == true)
            #expect(after.bool("bit0") == true && after.bool("bit1") == false)
            let month = harness.clock.now().formatted(
                Date.ISO8601FormatStyle(timeZone: .gmt).year().month().dateSeparator(.dash))
            #expect(after.string("lastUpdateTime") == month)

            let both = try await harness.post(
                "/v1/devicecheck/update", ["deviceToken": .string(token), "bit0": false, "bit1": true])
            #expect(both.status == 200, "\(both)")
            let last = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            #expect(last.bool("bit0") == false && last.bool("bit1") == true)

            let valid = try await harness.post("/v1/devicecheck/validate", ["deviceToken": .string(token)])
            #expect(valid.status == 200, "\(valid)")
            #expect(valid.bool("valid") == true)
            #expect(!valid.has("reason"))
            #expect(await harness.mock.state.requestCount(.queryTwoBits) == 3)
        }
    }

    @Test("DeviceCheck with the trial-and-ban preset: update by name, query answers the name, banned is sticky")
    func deviceCheckStates() async throws {
        var options = ServerHarness.Options()
        options.deviceCheckStates = .trialAndBan
        try await ServerHarness.with(.sqlite, options) { harness in
            let token = Fixture.deviceToken()
            let fresh = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            #expect(fresh.string("state") == "trial_eligible")
            let active = try await harness.post(
                "/v1/devicecheck/update", ["deviceToken": .string(token), "state": "trial_active"])
            #expect(active.status == 200, "\(active)")
            let activeQuery = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            // 10: bit0 set, bit1 clear.
            #expect(activeQuery.bool("bit0") == true && activeQuery.bool("bit1") == false)
            #expect(activeQuery.string("state") == "trial_active")
            let used = try await harness.post(
                "/v1/devicecheck/update", ["deviceToken": .string(token), "state": "trial_used"])
            #expect(used.status == 200, "\(used)")
            let query = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            // 11: both bits.
            #expect(query.bool("bit0") == true && query.bool("bit1") == true)
            #expect(query.string("state") == "trial_used")
            _ = try await harness.post("/v1/devicecheck/update", ["deviceToken": .string(token), "state": "banned"])
            let banned = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            // 01: bit1 only.
            #expect(banned.bool("bit0") == false && banned.bool("bit1") == true && banned.string("state") == "banned")
            let unknown = try await harness.post(
                "/v1/devicecheck/update", ["deviceToken": .string(token), "state": "vip"])
            #expect(unknown.status == 400 && unknown.errorCode == "invalid_field")
            let both = try await harness.post(
                "/v1/devicecheck/update", ["deviceToken": .string(token), "state": "banned", "bit0": true])
            #expect(both.status == 400 && both.errorCode == "invalid_field")
            // Banned is sticky for the backend, by name or by bits; the operator lifts it.
            for body: JSONValue in [
                ["deviceToken": .string(token), "state": "trial_eligible"],
                ["deviceToken": .string(token), "bit1": false],
            ] {
                let refused = try await harness.post("/v1/devicecheck/update", body)
                #expect(refused.status == 403 && refused.errorCode == "devicecheck_unban_requires_admin", "\(refused)")
            }
            let stillBanned = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            #expect(stillBanned.string("state") == "banned")
            let byBackend = try await harness.post(
                "/v1/devicecheck/unban", ["deviceToken": .string(token), "state": "trial_eligible"],
                headers: ServerHarness.backend)
            #expect(byBackend.status == 401 && byBackend.errorCode == "admin_unauthorized")
            let lifted = try await harness.post(
                "/v1/devicecheck/unban", ["deviceToken": .string(token), "state": "trial_eligible"],
                headers: ServerHarness.admin)
            #expect(lifted.status == 200, "\(lifted)")
            let after = try await harness.post("/v1/devicecheck/query", ["deviceToken": .string(token)])
            #expect(after.string("state") == "trial_eligible")
        }
        #expect(DeviceCheckStates.presets["trial-and-ban"] == .trialAndBan)
        #expect(DeviceCheckStates.trialAndBan.name(bit0: false, bit1: true) == "banned")
        #expect(throws: ServerConfigurationError.self) { try DeviceCheckStates(["a", "b", "c"]) }
        #expect(throws: ServerConfigurationError.self) { try DeviceCheckStates(["a", "b", "c", "a"]) }
        #expect(throws: ServerConfigurationError.self) { try DeviceCheckStates(["a", "b", "c", "Banned"]) }
    }

    @Test(
        "admin: the key with its risk history after receipt refresh rounds, then revoked",
        arguments: await StoreKind.all())
    func admin(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.policy.riskMetricThreshold = 5
        options.mockRiskMetric = 7
        try await ServerHarness.with(kind, options) { harness in
            let device = try await TestDevice.registered(harness)
            let attestedAt = harness.clock.now()
            let refresh = try #require(harness.server.receiptRefresh)

            // The ATTEST receipt can be exchanged at once; an hour later the exchange returns a newer receipt.
            harness.clock.advance(by: 3_600)
            let first = await refresh.round()
            #expect(first.refreshed == 1 && !first.backedOff, "\(first)")
            // Not due again before the new receipt's Not Before (a day after its creation).
            #expect(await refresh.round().refreshed == 0)
            harness.clock.advance(by: 86_400 + 60)
            let second = await refresh.round()
            #expect(second.refreshed == 1, "\(second)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 2)

            // Only the key's one spelling, percent-encoded, names it; base64url, unpadded or with non-zero unused
            // bits is another spelling, refused (400 key_id_malformed).
            let spellings = [device.keyID.base64URL, device.keyID.base64URL + "=", device.keyID.withUnusedBits]
            // (base64url with padding is the standard spelling when the key has no `+` or `/`.)
            for path in spellings.filter({ $0 != device.keyID.base64 }).map({
                $0.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            }) {
                let refused = try await harness.get("/v1/keys/\(path)", headers: ServerHarness.admin)
                #expect(refused.status == 400 && refused.string("error.code") == "key_id_malformed", "\(refused)")
            }
            for path in [device.keyID.pathComponent] {
                let record = try await harness.get("/v1/keys/\(path)", headers: ServerHarness.admin)
                #expect(record.status == 200, "\(path): \(record)")
                #expect(record.string("keyId") == device.keyID.base64)
                #expect(record.int("riskMetric") == 7)
                #expect(record.bool("stepUp") == true)
                #expect(record.string("receipt.createdAt") == TestClock.apiText(harness.clock.now()))
                #expect(
                    record.string("receipt.refreshAt")
                        == TestClock.apiText(harness.clock.now().addingTimeInterval(86_400)))
                let history = try #require(record.objects("riskHistory"))
                #expect(history.count == 2)
                #expect(history.map { $0["riskMetric"] as? Int } == [7, 7])
                #expect(
                    history.map { $0["receiptCreatedAt"] as? String } == [
                        TestClock.apiText(harness.clock.now()),
                        TestClock.apiText(attestedAt.addingTimeInterval(3_600)),
                    ])
            }
            // Step-up shows in assertion answers too.
            let answer = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(answer.status == 200, "\(answer)")
            #expect(answer.int("riskMetric") == 7)
            #expect(answer.bool("stepUp") == true)

            let revoked = try await harness.post(
                "/v1/keys/\(device.keyID.pathComponent)/revoke", .raw(""), headers: ServerHarness.admin)
            #expect(revoked.status == 200, "\(revoked)")
            #expect(revoked.string("state") == "revoked")
            #expect(revoked.string("revokedAt") == TestClock.apiText(harness.clock.now()))
            let again = try await harness.post(
                "/v1/keys/\(device.keyID.pathComponent)/revoke", .raw(""), headers: ServerHarness.admin)
            #expect(again.status == 200 && again.string("state") == "revoked", "\(again)")
            // A revoked key is not refreshed.
            harness.clock.advance(by: 2 * 86_400)
            #expect(await refresh.round().refreshed == 0)
        }
    }

    @Test("operations: health, ready and metrics", arguments: await StoreKind.all())
    func operations(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let health = try await harness.get("/health")
            #expect(health.status == 200 && health.string("status") == "ok", "\(health)")
            let ready = try await harness.get("/ready")
            #expect(ready.status == 200 && ready.string("status") == "ready", "\(ready)")

            let device = try await TestDevice.registered(harness)
            _ = try await device.verify(try device.verifyBody(freshness: device.now))
            _ = try await harness.post("/v1/devicecheck/validate", ["deviceToken": .string(Fixture.deviceToken())])
            let metrics = try await harness.get("/metrics")
            #expect(metrics.status == 200)
            #expect(metrics.header("Content-Type")?.hasPrefix("text/plain; version=0.0.4") == true)
            for name in [
                "attestkit_verifications_total", "attestkit_verification_duration_seconds",
                "attestkit_http_requests_total", "attestkit_keys", "attestkit_devicecheck_requests_total",
            ] {
                #expect(metrics.text.contains(name), "\(name) missing")
            }
            #expect(metrics.text.contains(#"kind="attestation""#) && metrics.text.contains(#"kind="assertion""#))
            #expect(metrics.text.contains(#"route="/v1/attestations""#))
            let keys = metrics.text.split(separator: "\n").filter { $0.hasPrefix("attestkit_keys") }
            #expect(
                keys.contains {
                    $0.contains(#"environment="development""#) && $0.contains(#"state="active""#)
                        && ($0.hasSuffix(" 1") || $0.hasSuffix(" 1.0"))
                }, "\(keys)")
        }
    }
}

extension KeyID {
    /// The key's one spelling (standard padded Base64), percent-encoded, as admin paths take it.
    var pathComponent: String { base64.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }

    /// Standard padded Base64 with non-zero unused bits in its last character: decodes to the same 32 bytes, and
    /// is another spelling of the key, refused at every entry point.
    var withUnusedBits: String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
        var characters = Array(base64)
        guard let index = alphabet.firstIndex(of: characters[42]) else { return base64 }
        characters[42] = alphabet[index | 1]
        return String(characters)
    }

    /// base64url without padding: another spelling of the key, refused at every entry point.
    var base64URL: String {
        base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
