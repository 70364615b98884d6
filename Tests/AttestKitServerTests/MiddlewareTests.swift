import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// ``AttestKitMiddleware`` guarding a route of a Hummingbird application, over HTTP, with the gate of the server
/// under test: the app sends its assertion in headers, bound to the request actually received.
@Suite("AttestKitMiddleware")
struct MiddlewareTests {
    static let body = Array("{\"item\":\"book\",\"quantity\":2}".utf8)

    @Test("a guarded route gets the verified key on its context", arguments: await StoreKind.all())
    func accepted(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            var counter = 0
            for useChallenge in [true, false] {
                let freshness = useChallenge ? try await device.assertChallenge() : device.now
                let headers = try device.guardedHeaders(
                    method: "POST", target: "/api/orders?ref=a%20b", body: Self.body, freshness: freshness)
                let answer = try await harness.send(
                    .POST, "/api/orders?ref=a%20b", body: Self.body, headers: headers, to: .guarded)
                counter += 1
                #expect(answer.status == 200, "\(answer)")
                #expect(answer.string("keyId") == device.keyID.base64)
                #expect(answer.int("counter") == counter)
                // The body reached the route intact after the middleware hashed it.
                #expect(answer.int("bodyBytes") == Self.body.count)
            }
            let get = try await harness.send(
                .GET, "/api/orders",
                headers: try device.guardedHeaders(
                    method: "GET", target: "/api/orders", body: [], freshness: device.now),
                to: .guarded)
            #expect(get.status == 200 && get.int("counter") == counter + 1, "\(get)")
            // The server's verify endpoint sees the same counter: one gate, one store.
            let verify = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(verify.int("counter") == counter + 2, "\(verify)")
        }
    }

    @Test("tampered requests are 403 signature_invalid, replays 409", arguments: await StoreKind.all())
    func refused(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let headers = try device.guardedHeaders(
                method: "POST", target: "/api/orders", body: Self.body, freshness: device.now)
            for (method, path, body) in [
                ("POST", "/api/orders", Array("{\"item\":\"book\",\"quantity\":200}".utf8)),
                ("POST", "/api/orders?quantity=200", Self.body),
                ("GET", "/api/orders", Self.body),
                ("POST", "/api/orders", [UInt8]()),
            ] {
                let answer = try await harness.send(
                    .init(rawValue: method), path, body: body.isEmpty ? nil : body, headers: headers, to: .guarded)
                #expect(answer.status == 403 && answer.errorCode == "signature_invalid", "\(method) \(path): \(answer)")
            }
            let genuine = try await harness.send(.POST, "/api/orders", body: Self.body, headers: headers, to: .guarded)
            #expect(genuine.status == 200, "\(genuine)")
            let replay = try await harness.send(.POST, "/api/orders", body: Self.body, headers: headers, to: .guarded)
            #expect(replay.status == 409 && replay.errorCode == "counter_not_increasing", "\(replay)")

            // A challenge is spent once even with a new assertion.
            let challenge = try await device.assertChallenge()
            let first = try device.guardedHeaders(
                method: "POST", target: "/api/orders", body: Self.body, freshness: challenge)
            let accepted = try await harness.send(.POST, "/api/orders", body: Self.body, headers: first, to: .guarded)
            #expect(accepted.status == 200, "\(accepted)")
            let second = try device.guardedHeaders(
                method: "POST", target: "/api/orders", body: Self.body, freshness: challenge)
            let spent = try await harness.send(.POST, "/api/orders", body: Self.body, headers: second, to: .guarded)
            #expect(spent.status == 409 && spent.errorCode == "challenge_consumed", "\(spent)")

            // Old timestamps, revoked keys.
            let old = try device.guardedHeaders(
                method: "POST", target: "/api/orders", body: Self.body,
                freshness: .timestamp(milliseconds: harness.clock.milliseconds - 301_000))
            let stale = try await harness.send(.POST, "/api/orders", body: Self.body, headers: old, to: .guarded)
            #expect(stale.status == 403 && stale.errorCode == "timestamp_outside_window", "\(stale)")
            _ = try await harness.post(
                "/v1/keys/\(device.keyID.base64URL)/revoke", .raw(""), headers: ServerHarness.admin)
            let revoked = try await harness.send(
                .POST, "/api/orders", body: Self.body,
                headers: try device.guardedHeaders(
                    method: "POST", target: "/api/orders", body: Self.body, freshness: device.now),
                to: .guarded)
            #expect(revoked.status == 403 && revoked.errorCode == "key_revoked", "\(revoked)")
        }
    }

    @Test(
        "missing or malformed headers: 401 assertion_required, 400 for the malformed", arguments: await StoreKind.all())
    func headers(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let valid = try device.guardedHeaders(
                method: "POST", target: "/api/orders", body: Self.body, freshness: device.now)
            func without(_ name: String) -> [(String, String)] { valid.filter { $0.0 != name } }
            let cases: [([(String, String)], Int, String)] = [
                ([], 401, "assertion_required"),
                (without(AttestKitHeaderNames.keyID), 401, "assertion_required"),
                (without(AttestKitHeaderNames.assertion), 401, "assertion_required"),
                (without(AttestKitHeaderNames.timestamp), 401, "assertion_required"),
                (valid + [(AttestKitHeaderNames.challenge, "AAAAAAAAAAAAAAAAAAAAAA")], 400, "invalid_freshness"),
                (
                    without(AttestKitHeaderNames.timestamp) + [(AttestKitHeaderNames.timestamp, "soon")], 400,
                    "invalid_freshness"
                ),
                (
                    without(AttestKitHeaderNames.timestamp) + [(AttestKitHeaderNames.challenge, "short")], 400,
                    "invalid_freshness"
                ),
                (valid + [(AttestKitHeaderNames.keyID.lowercased(), device.keyID.base64)], 400, "header_repeated"),
                (without(AttestKitHeaderNames.keyID) + [(AttestKitHeaderNames.keyID, "AAAA")], 400, "key_id_malformed"),
                (without(AttestKitHeaderNames.assertion) + [(AttestKitHeaderNames.assertion, "***")], 400, "invalid_field"),
                (
                    without(AttestKitHeaderNames.assertion) + [(AttestKitHeaderNames.assertion, "AAAA")], 400,
                    "assertion_malformed|cbor_malformed"
                ),
            ]
            for (headers, status, code) in cases {
                let answer = try await harness.send(
                    .POST, "/api/orders", body: Self.body, headers: headers, to: .guarded)
                let codes = code.split(separator: "|").map(String.init)
                #expect(
                    answer.status == status && codes.contains(answer.errorCode ?? ""), "\(headers.map(\.0)): \(answer)")
            }
            // After all of that, the untouched headers still pass.
            let answer = try await harness.send(.POST, "/api/orders", body: Self.body, headers: valid, to: .guarded)
            #expect(answer.status == 200, "\(answer)")
        }
    }
}
