import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTestSupport
import AttestKitWire
import Crypto
import Foundation
import Testing

/// `POST /v1/requests/verify`, the decision route for backends in any language, through the server's router: the
/// backend audience, the requests it cannot decide about (400, 413), the body given as bytes or as its hash, the
/// headers by name case-insensitively, route groups, the decision's effects (the counter advanced once, a challenge
/// consumed), and a storage outage decided as a refusal (fail closed), logged and counted once.
///
/// The decision itself, under every enforcement and fallback, is the shared suite's (AttestKitEdgeTests, the
/// decision edge).
@Suite("Decision route")
struct RequestVerificationRouteTests {
    static let body = Array(#"{"item":"book","quantity":2}"#.utf8)
    static let target = "/orders?ref=a"

    /// The route's request about `POST /orders?ref=a` with `headers` (name, value) and the body Base64 by default.
    static func request(
        _ headers: [(String, String)], body: [UInt8] = body, method: String = "POST", target: String = target,
        group: String? = nil, hashed: Bool = false
    ) -> JSONValue {
        var request: JSONValue = [
            "method": .string(method), "target": .string(target),
            "headers": .object(headers.map { JSONValue.Member(key: $0.0, value: .string($0.1)) }),
        ]
        if !body.isEmpty {
            request =
                hashed
                ? request.setting(
                    "bodySha256", .string(SHA256.hash(data: body).map { String(format: "%02x", $0) }.joined()))
                : request.setting("body", .base64(body))
        }
        if let group { request = request.setting("group", .string(group)) }
        return request
    }

    /// The AttestKit headers of `device` over the default request, fresh now.
    static func headers(
        _ device: TestDevice, body: [UInt8] = body, freshness: Freshness? = nil
    ) throws -> [(String, String)] {
        try device.guardedHeaders(method: "POST", target: target, body: body, freshness: freshness ?? device.now)
    }

    /// POSTs `request` to the route and requires a 200 decision.
    static func decide(
        _ harness: ServerHarness, _ request: JSONValue, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> RequestVerificationResponse {
        let answer = try await harness.post("/v1/requests/verify", request, sourceLocation: sourceLocation)
        try #require(answer.status == 200, "\(answer)", sourceLocation: sourceLocation)
        return try #require(
            try? WireJSON.decode(RequestVerificationResponse.self, from: Data(answer.body)), "\(answer)",
            sourceLocation: sourceLocation)
    }

    @Test(
        "allowed once: the key's counter advances once per allowed assertion, a replay or a consumed challenge is refused",
        arguments: await StoreKind.all())
    func counterAndReplay(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let headers = try Self.headers(device)
            let allowed = try await Self.decide(harness, Self.request(headers))
            #expect(
                allowed
                    == RequestVerificationResponse(
                        allowed: true, group: "default", enforced: true, trust: "app_attest",
                        keyId: device.keyID.base64, counter: 1, stepUp: false))
            let replay = try await Self.decide(harness, Self.request(headers))
            #expect(!replay.allowed && replay.status == 409 && replay.error?.code == "counter_not_increasing")
            #expect(replay.keyId == nil && replay.counter == nil && replay.trust == nil, "\(replay)")
            #expect(try await harness.store.key(device.keyID)?.counter == 1)

            // Challenge freshness: the challenge is consumed by the decision.
            let challenge = try await device.assertChallenge()
            let bound = try Self.headers(device, freshness: challenge)
            let second = try await Self.decide(harness, Self.request(bound))
            #expect(second.allowed && second.counter == 2, "\(second)")
            let again = try await Self.decide(harness, Self.request(bound))
            #expect(!again.allowed && again.status == 409, "\(again)")
            #expect(try await harness.store.key(device.keyID)?.counter == 2)
        }
    }

    @Test("bodySha256 decides like body; a refused decision spends nothing", arguments: await StoreKind.all())
    func bodyHash(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let headers = try Self.headers(device)
            let other = Array(#"{"item":"book","quantity":200}"#.utf8)
            let tampered = try await Self.decide(harness, Self.request(headers, body: other, hashed: true))
            #expect(!tampered.allowed && tampered.status == 403 && tampered.error?.code == "signature_invalid")
            let hashed = try await Self.decide(harness, Self.request(headers, hashed: true))
            #expect(hashed.allowed && hashed.counter == 1, "\(hashed)")
            // The same assertion by body: the same request, already decided.
            let replay = try await Self.decide(harness, Self.request(headers))
            #expect(!replay.allowed && replay.error?.code == "counter_not_increasing", "\(replay)")
            // An empty body: neither field, or an empty `body`.
            let empty = try Self.headers(device, body: [])
            let none = try await Self.decide(harness, Self.request(empty, body: []))
            #expect(none.allowed, "\(none)")
            let blank = try Self.headers(device, body: [])
            let emptyBody = try await Self.decide(harness, Self.request(blank, body: []).setting("body", ""))
            #expect(emptyBody.allowed, "\(emptyBody)")
        }
    }

    @Test(
        "header names are case-insensitive, other headers ignored; one name twice in two cases is refused",
        arguments: await StoreKind.all())
    func headerNames(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let lower = try Self.headers(device).map { ($0.0.lowercased(), $0.1) }
            let extra = [("Authorization", "Bearer not-for-the-decision"), ("X-Other", "1")]
            let allowed = try await Self.decide(harness, Self.request(lower + extra))
            #expect(allowed.allowed && allowed.keyId == device.keyID.base64, "\(allowed)")
            let headers = try Self.headers(device)
            let upper = headers.map { ($0.0.uppercased(), $0.1) }
            #expect(try await Self.decide(harness, Self.request(upper)).allowed)
            let twice = try Self.headers(device)
            for repeated in [
                twice + [(AttestKitHeaderNames.keyID.lowercased(), device.keyID.base64)],
                twice + [(AttestKitHeaderNames.assertion.uppercased(), twice[1].1)],
            ] {
                let refused = try await Self.decide(harness, Self.request(repeated))
                #expect(!refused.allowed && refused.status == 400 && refused.error?.code == "header_repeated")
            }
            // Refused before verification: the assertion was not spent.
            #expect(try await Self.decide(harness, Self.request(twice)).allowed)
        }
    }

    @Test("a backend route: 401 without the backend token or with another; 503 when none is configured")
    func audience() async throws {
        var options = ServerHarness.Options()
        options.sendsBackendToken = false
        try await ServerHarness.with(.sqlite, options) { harness in
            let request = Self.request([])
            for authorization in [
                [], [("Authorization", "Bearer wrong-backend-token-000000")], ServerHarness.admin,
                [("Authorization", Fixture.backendToken)],
            ] {
                let answer = try await harness.post("/v1/requests/verify", request, headers: authorization)
                #expect(answer.status == 401 && answer.errorCode == "backend_unauthorized", "\(answer)")
            }
            let answer = try await harness.post("/v1/requests/verify", request, headers: ServerHarness.backend)
            #expect(answer.status == 200, "\(answer)")
        }
        options.backendTokens = []
        try await ServerHarness.with(.sqlite, options) { harness in
            let answer = try await harness.post(
                "/v1/requests/verify", Self.request([]), headers: ServerHarness.backend, allow5xx: true)
            #expect(answer.status == 503 && answer.errorCode == "backend_not_configured", "\(answer)")
        }
    }

    @Test("what cannot be decided about is 400, a body over the route's limit 413; neither spends the assertion")
    func malformed() async throws {
        var options = ServerHarness.Options()
        options.enforcementGroups = ["payments": .init()]
        try await ServerHarness.with(.sqlite, options) { harness in
            let device = try await TestDevice.registered(harness)
            let headers = try Self.headers(device)
            let valid = Self.request(headers)
            let hash = String(repeating: "ab", count: 32)
            let cases: [(JSONValue, String)] = [
                (.raw("{\"method\": \"POST\""), "invalid_json"),
                (.raw("[]"), "invalid_json"),
                (valid.setting("method", nil), "invalid_json"),
                (valid.setting("headers", .array([])), "invalid_json"),
                (valid.setting("headers", ["X-AttestKit-Key-Id": 1]), "invalid_json"),
                (valid.setting("group", "nope"), "group_unknown"),
                (valid.setting("group", ""), "group_unknown"),
                (valid.setting("body", "***"), "invalid_field"),
                (valid.setting("bodySha256", .string(hash)), "invalid_field"),
                (valid.setting("body", nil).setting("bodySha256", "abcd"), "invalid_field"),
                (
                    valid.setting("body", nil).setting("bodySha256", .string(String(repeating: "zz", count: 32))),
                    "invalid_field"
                ),
                (valid.setting("method", "GE T"), "invalid_method"),
                (valid.setting("method", ""), "invalid_method"),
                (valid.setting("target", "orders"), "invalid_target"),
                (valid.setting("target", "/orders#top"), "invalid_target"),
                // The client is counted by its address: free text (a whole forwarded header, a name) is not one.
                (valid.setting("client", "198.51.100.7, 10.0.0.1"), "invalid_field"),
                (valid.setting("client", "unknown"), "invalid_field"),
                (valid.setting("client", .string(String(repeating: "a", count: 100_000))), "invalid_field"),
                (valid.setting("client", "fe80::1%eth0"), "invalid_field"),
                // Every member changes the decision: a misspelt one, a null one or one given twice is refused, never
                // read as absent (the default group, an unchecked body) or as one of its two values.
                (valid.setting("Group", "payments"), "invalid_json"),
                (valid.setting("group", .null), "invalid_json"),
                (valid.setting("subject", .null), "invalid_json"),
                (valid.setting("bodySHA256", .string(hash)), "invalid_json"),
                (valid.setting("body", nil).setting("body_sha256", .string(hash)), "invalid_json"),
                (.raw("{\"group\":\"payments\"," + valid.setting("group", "default").text.dropFirst()), "invalid_json"),
                (
                    valid.setting(
                        "headers",
                        .object(
                            headers.map { JSONValue.Member(key: $0.0, value: .string($0.1)) }
                                + [JSONValue.Member(key: headers[0].0, value: .string(headers[0].1))])),
                    "invalid_json"
                ),
            ]
            for (request, code) in cases {
                let answer = try await harness.post("/v1/requests/verify", request)
                #expect(answer.status == 400 && answer.errorCode == code, "\(request.text.prefix(200)): \(answer)")
            }
            // A header's name is the app's own text: a refusal names it as printable ASCII, 64 characters at most.
            let name = "\u{1b}[2J<img src=x onerror=alert(1)>" + String(repeating: "A", count: 10_000)
            let named = try await harness.post("/v1/requests/verify", valid.setting("headers", [name: 1]))
            let message = named.errorMessage ?? ""
            #expect(named.status == 400 && named.errorCode == "invalid_json", "\(named)")
            #expect(!message.unicodeScalars.contains { $0.value < 0x20 } && message.utf8.count < 200, "\(message)")
            // Over the route's own limit (a request body of `http.body-limit` bytes in Base64, and its headers).
            let huge = valid.setting("body", .string(String(repeating: "A", count: 65_536 / 3 * 4 + 20_000)))
            let tooLarge = try await harness.post("/v1/requests/verify", huge)
            #expect(tooLarge.status == 413 && tooLarge.errorCode == "payload_too_large", "\(tooLarge)")
            #expect(try await Self.decide(harness, valid).allowed)
        }
    }

    @Test("a request body of http.body-limit bytes is decided about; one byte more is refused 400")
    func bodyLimit() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let device = try await TestDevice.registered(harness)
            for size in [65_537, 65_538, 65_541] {
                let body = [UInt8](repeating: 0x61, count: size)
                let answer = try await harness.post(
                    "/v1/requests/verify", Self.request(try Self.headers(device, body: body), body: body))
                #expect(answer.status == 400 && answer.errorCode == "invalid_field", "\(size): \(answer)")
            }
            let body = [UInt8](repeating: 0x61, count: 65_536)
            #expect(try await harness.store.key(device.keyID)?.counter == 0)
            let decision = try await Self.decide(
                harness, Self.request(try Self.headers(device, body: body), body: body))
            // The device's fourth assertion: the three refused ones left the stored counter alone.
            #expect(decision.allowed && decision.counter == 4, "\(decision)")
        }
    }

    @Test("an assertion bound to a body of http.body-limit bytes verifies on /v1/assertions/verify too")
    func assertionRouteBodyLimit() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let device = try await TestDevice.registered(harness)
            let body = [UInt8](repeating: 0x61, count: 65_536)
            let binding = try device.binding(body: body, freshness: device.now)
            let request = TestDevice.verifyBody(
                keyID: device.keyID, assertion: try device.assertion(over: binding.clientData), binding: binding,
                body: body, form: .parts)
            // Its Base64 inside the JSON is larger than the body limit: the route leaves it the decision route's room.
            let answer = try await device.verify(request)
            #expect(answer.status == 200, "\(answer)")
        }
    }

    @Test("named route groups decide under their own enforcement", arguments: await StoreKind.all())
    func groups(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.enforcementGroups = [
            "feed": .init(mode: .report), "beta": .init(mode: .enforce, rollout: 0), "off": .init(mode: .off),
        ]
        try await ServerHarness.with(kind, options) { harness in
            let unproved = Self.request([])
            let enforced = try await Self.decide(harness, unproved)
            #expect(!enforced.allowed && enforced.enforced && enforced.group == "default", "\(enforced)")
            #expect(enforced.status == 401 && enforced.error?.code == "assertion_required", "\(enforced)")
            // `feed` reports; `beta` enforces for no subject (rollout 0), and places a request without one as
            // `default` does (enforced).
            for (group, request) in [("feed", unproved), ("beta", unproved.setting("subject", "user-1"))] {
                let reported = try await Self.decide(harness, request.setting("group", .string(group)))
                #expect(reported.allowed && !reported.enforced && reported.group == group, "\(reported)")
                #expect(reported.error?.code == "assertion_required" && reported.status == nil, "\(reported)")
            }
            let subjectless = try await Self.decide(harness, unproved.setting("group", "beta"))
            #expect(!subjectless.allowed && subjectless.status == 401, "\(subjectless)")
            // An empty subject (a backend's anonymous user) is no subject: placed as the request without one.
            let empty = try await Self.decide(harness, unproved.setting("group", "beta").setting("subject", ""))
            #expect(!empty.allowed && empty.status == 401, "\(empty)")
            let off = try await Self.decide(harness, unproved.setting("group", "off"))
            #expect(off.allowed && !off.enforced && off.error == nil && off.group == "off", "\(off)")
            let device = try await TestDevice.registered(harness)
            let feed = try await Self.decide(harness, Self.request(try Self.headers(device), group: "feed"))
            #expect(feed.allowed && feed.trust == "app_attest" && !feed.enforced && feed.counter == 1, "\(feed)")
            let unknown = try await harness.post("/v1/requests/verify", unproved.setting("group", "Feed"))
            #expect(unknown.status == 400 && unknown.errorCode == "group_unknown", "\(unknown)")
            #expect(unknown.errorMessage?.contains("beta, default, feed, off") == true, "\(unknown)")
        }
    }

    @Test("an unenforced group lets through a body over the limit or an unbindable target (reported); off, anything")
    func unenforcedLetsThrough() async throws {
        var options = ServerHarness.Options()
        options.enforcementGroups = ["feed": .init(mode: .report), "legacy": .init(mode: .off)]
        try await ServerHarness.with(.sqlite, options) { harness in
            let large = [UInt8](repeating: 0x61, count: 65_537)
            let longTarget = "/feed?q=" + String(repeating: "a", count: 9_000)
            let requests: [JSONValue] = [
                Self.request([], body: large),
                Self.request([], body: [], method: "GET", target: longTarget),
                Self.request([], body: [], method: "M-SEARCH", target: "/feed"),
            ]
            let reported = ["payload_too_large", "assertion_required", "assertion_required"]
            for (request, code) in zip(requests, reported) {
                let feed = try await Self.decide(harness, request.setting("group", "feed"))
                #expect(feed.allowed && !feed.enforced && feed.error?.code == code, "\(feed)")
                let legacy = try await Self.decide(harness, request.setting("group", "legacy"))
                #expect(legacy.allowed && !legacy.enforced && legacy.error == nil, "\(legacy)")
                // Where the group enforces, none of them is decided about.
                let enforced = try await harness.post("/v1/requests/verify", request)
                #expect(enforced.status == 400, "\(enforced)")
            }
            // Nor a client that is no address (a zoned IPv6 peer): only a group that enforces refuses it.
            let client = Self.request([]).setting("client", "fe80::1%eth0")
            for group in ["legacy", "feed"] {
                #expect(try await Self.decide(harness, client.setting("group", .string(group))).allowed, "\(group)")
            }
            let refused = try await harness.post("/v1/requests/verify", client)
            #expect(refused.status == 400 && refused.errorCode == "invalid_field", "\(refused)")
        }
    }

    @Test("a storage outage is a refusal of 503 storage_unavailable (fail closed), logged and counted once")
    func storageOutage() async throws {
        try await StorageFailureTests.withSQLiteServer { harness, store, capture in
            let device = try await TestDevice.registered(harness)
            _ = try await store.executeOnWriter("PRAGMA query_only = ON")
            let counted = StorageFailureTests.storageErrors(harness)
            let decision = try await Self.decide(harness, Self.request(try Self.headers(device)))
            #expect(!decision.allowed && decision.status == 503, "\(decision)")
            #expect(decision.error?.code == "storage_unavailable" && decision.keyId == nil, "\(decision)")
            let lines = capture.logged.filter { $0.message.hasPrefix("storage unavailable") }
            #expect(lines.count == 1, "\(lines)")
            #expect(StorageFailureTests.storageErrors(harness) == counted + 1)
            _ = try await store.executeOnWriter("PRAGMA query_only = OFF")
            #expect(try await harness.store.key(device.keyID)?.counter == 0)
            let after = try await Self.decide(harness, Self.request(try Self.headers(device)))
            #expect(after.allowed && after.counter == 2, "\(after)")
        }
    }
}
