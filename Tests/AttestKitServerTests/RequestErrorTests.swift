import AttestKitFlows
import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// Error answers that do not depend on a verification: malformed requests, unknown routes, limits, features that
/// are not configured, admin credentials. Each with its status and the `{"error": {"code"}}` envelope.
@Suite("Request errors")
struct RequestErrorTests {
    @Test("malformed JSON, bad fields, malformed key ids", arguments: await StoreKind.all())
    func malformed(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let cases: [(String, JSONValue, Int, String)] = [
                ("/v1/challenges", .raw("not json"), 400, "invalid_json"),
                ("/v1/challenges", .raw("{\"purpose\": }"), 400, "invalid_json"),
                ("/v1/challenges", ["purpose": 7], 400, "invalid_json"),
                ("/v1/challenges", ["purpose": "other"], 400, "invalid_field"),
                // An attest challenge may name the key the app generated (#33: the attestation ramp), not an app
                // the service does not accept, nor an app for an assertion.
                ("/v1/challenges", ["purpose": "attest", "appId": "nope"], 400, "invalid_field"),
                (
                    "/v1/challenges", ["purpose": "assert", "appId": .string(Fixture.appID.description)], 400,
                    "invalid_field"
                ),
                ("/v1/challenges", ["purpose": "assert", "keyId": "abc"], 400, "key_id_malformed"),
                ("/v1/attestations", .raw(""), 400, "invalid_json"),
                ("/v1/attestations", ["keyId": .string(KeyID.sample.base64)], 400, "invalid_json"),
                (
                    "/v1/attestations",
                    ["keyId": "AAAA", "attestation": "AAAA", "challengeId": "AAAAAAAAAAAAAAAAAAAAAA"], 400,
                    "key_id_malformed"
                ),
                (
                    "/v1/attestations",
                    [
                        "keyId": .string(KeyID.sample.base64), "attestation": "%%%",
                        "challengeId": "AAAAAAAAAAAAAAAAAAAAAA",
                    ],
                    400, "invalid_field"
                ),
                (
                    "/v1/attestations",
                    ["keyId": .string(KeyID.sample.base64), "attestation": "AAAA", "challengeId": "short"], 400,
                    "invalid_field"
                ),
                (
                    "/v1/assertions/verify", ["keyId": .string(KeyID.sample.base64), "assertion": "AAAA"], 400,
                    "invalid_field"
                ),
                ("/v1/devicecheck/query", ["deviceToken": "not base64!"], 400, "invalid_field"),
                ("/v1/devicecheck/update", ["deviceToken": .string(Fixture.deviceToken())], 400, "invalid_field"),
            ]
            for (path, body, status, code) in cases {
                let answer = try await harness.post(path, body)
                #expect(answer.status == status && answer.errorCode == code, "\(path) \(body.text): \(answer)")
                #expect(answer.errorMessage?.isEmpty == false)
            }
            let admin = try await harness.get("/v1/keys/not-a-key", headers: ServerHarness.admin)
            #expect(admin.status == 400 && admin.errorCode == "key_id_malformed", "\(admin)")
        }
    }

    @Test("a body over the limit is 413 payload_too_large", arguments: await StoreKind.all())
    func payloadTooLarge(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.bodyLimit = 4_096
        try await ServerHarness.with(kind, options) { harness in
            let big = JSONValue.object([
                .init(key: "keyId", value: .string(KeyID.sample.base64)),
                // Over the limit of every route: the verify routes take the limit in Base64 plus 16 KiB.
                .init(key: "attestation", value: .string(String(repeating: "A", count: 32_768))),
                .init(key: "challengeId", value: "AAAAAAAAAAAAAAAAAAAAAA"),
            ])
            for path in ["/v1/challenges", "/v1/attestations", "/v1/assertions/verify", "/v1/devicecheck/query"] {
                let answer = try await harness.post(path, big)
                #expect(answer.status == 413 && answer.errorCode == "payload_too_large", "\(path): \(answer)")
            }
            // The guarded application enforces the same limit.
            let guarded = try await harness.send(
                .POST, "/api/orders", body: Array(repeating: UInt8(ascii: "x"), count: 8_192),
                headers: [
                    ("X-AttestKit-Key-Id", KeyID.sample.base64), ("X-AttestKit-Assertion", "AAAA"),
                    ("X-AttestKit-Timestamp", "1"),
                ],
                to: .guarded)
            #expect(guarded.status == 413 && guarded.errorCode == "payload_too_large", "\(guarded)")
        }
    }

    @Test("unknown routes are 404 not_found; a known path with another method too", arguments: await StoreKind.all())
    func routes(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            for (method, path) in [
                ("GET", "/v1/nope"), ("POST", "/"), ("GET", "/v1/keys"), ("DELETE", "/v1/keys/abc/revoke/more"),
            ] {
                let answer = try await harness.send(.init(rawValue: method), path)
                #expect(answer.status == 404 && answer.errorCode == "not_found", "\(method) \(path): \(answer)")
            }
            // A known path with another method: 405 method_not_allowed with the Allow header (RFC 9110).
            for (method, path, allow) in [
                ("GET", "/v1/challenges", "POST"), ("PUT", "/v1/attestations", "POST"), ("POST", "/health", "GET"),
                ("TRACE", "/v1/keys/abc", "GET, DELETE"), ("GET", "/v1/keys/abc/revoke", "POST"),
            ] {
                let answer = try await harness.send(.init(rawValue: method), path)
                #expect(answer.status == 405 && answer.errorCode == "method_not_allowed", "\(method) \(path): \(answer)")
                #expect(answer.header("Allow") == allow, "\(method) \(path)")
            }
            // An empty {keyId} segment matches no route: 404, not a 405 naming the method just used.
            for (method, path) in [("GET", "/v1/keys/"), ("POST", "/v1/keys//revoke")] {
                let answer = try await harness.send(.init(rawValue: method), path, headers: ServerHarness.admin)
                #expect(answer.status == 404 && answer.errorCode == "not_found", "\(method) \(path): \(answer)")
            }
            // Metrics label a 405 with the route it matched and a 404 as unmatched, never the raw path.
            let metrics = try await harness.get("/metrics").text
            #expect(metrics.contains(#"route="/v1/challenges",method="GET",status="405""#) || metrics.contains(
                #"method="GET",route="/v1/challenges",status="405""#), "\(metrics)")
            #expect(metrics.contains(#"route="unmatched""#))
            #expect(!metrics.contains("/v1/nope") && !metrics.contains("NotFound"))
        }
    }

    @Test("rate limits answer 429 rate_limited with Retry-After", arguments: await StoreKind.all())
    func rateLimits(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.rateLimits = .init(attestationsPerIP: 2, attestationsPerApp: 0, challengesPerIP: 3)
        try await ServerHarness.with(kind, options) { harness in
            for _ in 0..<3 { _ = try await harness.challenge() }
            let limited = try await harness.post("/v1/challenges", .object([]))
            #expect(limited.status == 429 && limited.errorCode == "rate_limited", "\(limited)")
            // 3 a minute: one more in 20 s.
            #expect(limited.header("Retry-After") == "20")
            harness.clock.advance(by: 20)
            _ = try await harness.challenge()

            // Attestations per IP: counted before the attestation is looked at (a body that is not even the
            // request's JSON is refused before, spending nothing).
            let notJSON = try await harness.post("/v1/attestations", .raw("{}"))
            #expect(notJSON.status == 400, "\(notJSON)")
            let unverifiable = #"{"keyId": "x", "attestation": "x", "challengeId": "x"}"#
            for _ in 0..<2 {
                let answer = try await harness.post("/v1/attestations", .raw(unverifiable))
                #expect(answer.status == 400, "\(answer)")
            }
            let attestation = try await harness.post("/v1/attestations", .raw(unverifiable))
            #expect(attestation.status == 429 && attestation.errorCode == "rate_limited", "\(attestation)")
            #expect(attestation.header("Retry-After") == "30")
        }
        // Per app: counted on verified attestations only.
        options.rateLimits = .init(attestationsPerIP: 0, attestationsPerApp: 1, challengesPerIP: 0)
        try await ServerHarness.with(kind, options) { harness in
            _ = try await TestDevice.registered(harness)
            let second = try await TestDevice(harness).register()
            #expect(second.status == 429 && second.errorCode == "rate_limited", "\(second)")
            #expect(second.header("Retry-After") == "60")
            let metrics = try await harness.get("/metrics")
            #expect(metrics.text.contains(#"attestkit_rate_limited_total{limit="attestations_per_app"}"#))
        }
    }

    @Test("features that are not configured answer 503", arguments: await StoreKind.all())
    func notConfigured(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.appIDs = []
        options.apple = false
        options.adminToken = nil
        try await ServerHarness.with(kind, options) { harness in
            let device = TestDevice(harness)
            let challenge = try await harness.challenge()
            let attestation = try device.attestation(for: challenge)
            let answer = try await harness.post(
                "/v1/attestations", device.attestationBody(attestation, challengeID: challenge.id), allow5xx: true)
            #expect(answer.status == 503 && answer.errorCode == "apps_not_configured", "\(answer)")

            for path in ["/v1/devicecheck/query", "/v1/devicecheck/update", "/v1/devicecheck/validate"] {
                let apple = try await harness.post(
                    path, ["deviceToken": .string(Fixture.deviceToken()), "bit0": true], allow5xx: true)
                #expect(apple.status == 503 && apple.errorCode == "apple_not_configured", "\(path): \(apple)")
            }
            #expect(harness.server.receiptRefresh == nil)

            let admin = try await harness.get(
                "/v1/keys/\(KeyID.sample.pathComponent)", headers: ServerHarness.admin, allow5xx: true)
            #expect(admin.status == 503 && admin.errorCode == "admin_not_configured", "\(admin)")
            let revoke = try await harness.post("/v1/keys/\(KeyID.sample.pathComponent)/revoke", .raw(""), allow5xx: true)
            #expect(revoke.status == 503 && revoke.errorCode == "admin_not_configured", "\(revoke)")
        }
    }

    @Test("admin endpoints: 401 admin_unauthorized, 404 key_not_found", arguments: await StoreKind.all())
    func admin(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let path = "/v1/keys/\(device.keyID.pathComponent)"
            for headers in [
                [], [("Authorization", "Bearer wrong-token-0123456789")], [("Authorization", Fixture.adminToken)],
                [("Authorization", "Basic \(Fixture.adminToken)")], [("Authorization", "Bearer ")],
                [("Authorization", "Bearer \(Fixture.adminToken)x")],
            ] {
                let get = try await harness.get(path, headers: headers)
                #expect(get.status == 401 && get.errorCode == "admin_unauthorized", "\(headers): \(get)")
                let revoke = try await harness.post(path + "/revoke", .raw(""), headers: headers)
                #expect(revoke.status == 401 && revoke.errorCode == "admin_unauthorized", "\(headers): \(revoke)")
            }
            // The scheme is case-insensitive.
            let lower = try await harness.get(path, headers: [("Authorization", "bearer \(Fixture.adminToken)")])
            #expect(lower.status == 200, "\(lower)")
            // The key is still active: the refused revocations did nothing.
            #expect(lower.string("state") == "active")

            let unknown = "/v1/keys/\(KeyID.sample.pathComponent)"
            let get = try await harness.get(unknown, headers: ServerHarness.admin)
            #expect(get.status == 404 && get.errorCode == "key_not_found", "\(get)")
            let revoke = try await harness.post(unknown + "/revoke", .raw(""), headers: ServerHarness.admin)
            #expect(revoke.status == 404 && revoke.errorCode == "key_not_found", "\(revoke)")
        }
    }

    @Test("/ready answers 503 storage_unavailable once the store is closed", arguments: await StoreKind.all())
    func storageUnavailable(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            await harness.store.close()
            let ready = try await harness.get("/ready", allow5xx: true)
            #expect(ready.status == 503 && ready.errorCode == "storage_unavailable", "\(ready)")
            let challenge = try await harness.post("/v1/challenges", .object([]), allow5xx: true)
            #expect(challenge.status == 503 && challenge.errorCode == "storage_unavailable", "\(challenge)")
            let health = try await harness.get("/health")
            #expect(health.status == 200)
        }
    }
}

extension KeyID {
    /// A well-formed key identifier no device owns.
    static let sample: KeyID = {
        do { return try KeyID(bytes: [UInt8](repeating: 0xAB, count: 32)) } catch { preconditionFailure("\(error)") }
    }()
}
