import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import NIOHTTP1
import Testing

/// ``AttestKitMiddleware`` guarding a route of a Hummingbird application, through its router, with the gate of the
/// server under test: the app sends its assertion in headers, bound to the request actually received.
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

    // Accepted once, replay 409, tampered 403, missing or malformed headers 401/400, revoked 403: the shared suite
    // (AttestKitEdgeTests, GuardedRouteTests) runs those against this middleware and Vapor's on both SQL stores.

    @Test("a challenge is spent once; an old timestamp 403 (over HTTP)", arguments: await StoreKind.all())
    func refused(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
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

            // An old timestamp.
            let old = try device.guardedHeaders(
                method: "POST", target: "/api/orders", body: Self.body,
                freshness: .timestamp(milliseconds: harness.clock.milliseconds - 301_000))
            let stale = try await harness.send(.POST, "/api/orders", body: Self.body, headers: old, to: .guarded)
            #expect(stale.status == 403 && stale.errorCode == "timestamp_outside_window", "\(stale)")
        }
    }
}
