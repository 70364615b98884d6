import AttestKit
@testable import AttestKitClient
import AttestKitStore
import AttestKitWire
import Foundation
import Testing

/// One behavioural suite for both integrations (Hummingbird and Vapor), each on SQLite and PostgreSQL: the same
/// requests through each framework's `AttestKitMiddleware` must get the same answers.
@Suite("Guarded route, every edge and store")
struct GuardedRouteTests {
    static let body = Array(#"{"item":"book","quantity":2}"#.utf8)

    @Test("accepted with the verified key; its replay 409", arguments: await Edge.matrix())
    func acceptedThenReplay(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let device = try await EdgeDevice.registered(app)
            let headers = try device.headers("POST", "/orders", body: Self.body)
            let accepted = try await app.send("POST", "/orders", headers: headers, body: Self.body)
            #expect(accepted.status == 200, "\(accepted)")
            #expect(String(decoding: accepted.body, as: UTF8.self) == device.keyID.base64)
            let replay = try await app.send("POST", "/orders", headers: headers, body: Self.body)
            #expect(replay.status == 409 && replay.code == "counter_not_increasing", "\(replay)")
        }
    }

    @Test("a tampered body, method or target 403 signature_invalid", arguments: await Edge.matrix())
    func tampered(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let device = try await EdgeDevice.registered(app)
            let headers = try device.headers("POST", "/orders?ref=a", body: Self.body)
            for (method, target, body) in [
                ("POST", "/orders?ref=a", Array(#"{"item":"book","quantity":200}"#.utf8)),
                ("POST", "/orders?ref=b", Self.body),
                ("GET", "/orders?ref=a", Self.body),
                ("POST", "/orders?ref=a", []),
            ] {
                let answer = try await app.send(method, target, headers: headers, body: body)
                #expect(answer.status == 403 && answer.code == "signature_invalid", "\(method) \(target): \(answer)")
            }
            // None of them spent the assertion.
            let genuine = try await app.send("POST", "/orders?ref=a", headers: headers, body: Self.body)
            #expect(genuine.status == 200, "\(genuine)")
        }
    }

    @Test("missing headers 401 assertion_required; malformed ones 400", arguments: await Edge.matrix())
    func headers(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let device = try await EdgeDevice.registered(app)
            let valid = try device.headers("POST", "/orders", body: Self.body)
            func without(_ name: String) -> [(String, String)] { valid.filter { $0.0 != name } }
            func timestamp(_ headers: [(String, String)]) -> String? {
                headers.first { $0.0 == AttestKitHeaderNames.timestamp }?.1
            }
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
                // A repeated freshness header, or a fallback header repeated beside the assertion, is repeated too;
                // so is a header a proxy (WSGI, Node) joined with a comma.
                (
                    without(AttestKitHeaderNames.timestamp) + [
                        (
                            AttestKitHeaderNames.timestamp,
                            "\(try #require(timestamp(valid))),\(try #require(timestamp(valid)))"
                        )
                    ], 400, "header_repeated"
                ),
                (valid + [(AttestKitHeaderNames.deviceToken, "AAAA,BBBB")], 400, "header_repeated"),
                (
                    valid + [(AttestKitHeaderNames.timestamp.lowercased(), try #require(timestamp(valid)))], 400,
                    "header_repeated"
                ),
                (
                    valid + [
                        (AttestKitHeaderNames.deviceToken, "AAAA"),
                        (AttestKitHeaderNames.deviceToken.lowercased(), "AAAA"),
                    ],
                    400, "header_repeated"
                ),
                (without(AttestKitHeaderNames.keyID) + [(AttestKitHeaderNames.keyID, "AAAA")], 400, "key_id_malformed"),
                (
                    without(AttestKitHeaderNames.assertion) + [(AttestKitHeaderNames.assertion, "***")], 400,
                    "invalid_field"
                ),
                (
                    without(AttestKitHeaderNames.assertion) + [(AttestKitHeaderNames.assertion, "AAAA")], 400,
                    "assertion_malformed|cbor_malformed"
                ),
            ]
            for (headers, status, code) in cases {
                let answer = try await app.send("POST", "/orders", headers: headers, body: Self.body)
                let codes = code.split(separator: "|").map(String.init)
                #expect(
                    answer.status == status && codes.contains(answer.code ?? ""), "\(headers.map(\.0)): \(answer)")
            }
            // After all of that, the untouched headers still pass.
            let answer = try await app.send("POST", "/orders", headers: valid, body: Self.body)
            #expect(answer.status == 200, "\(answer)")
        }
    }

    @Test("a revoked key 403 key_revoked", arguments: await Edge.matrix())
    func revoked(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let device = try await EdgeDevice.registered(app)
            let before = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: Self.body), body: Self.body)
            #expect(before.status == 200, "\(before)")
            _ = try await app.store.revokeKey(device.keyID, now: Date())
            let after = try await app.send(
                "POST", "/orders", headers: try device.headers("POST", "/orders", body: Self.body), body: Self.body)
            #expect(after.status == 403 && after.code == "key_revoked", "\(after)")
        }
    }

    /// Request targets as a client sends them, percent-encoding and all: the target the client signed is the one
    /// the middleware verifies (Vapor rebuilds it from `req.url.string`, Hummingbird reads the request line).
    static let unusualTargets = [
        "/orders?q=a%20b&r=%2F", "/orders?q=%2f%2F", "/orders?q=a+b", "/orders?q=%7E~", "/orders?q=%25", "/orders?",
        "/orders?q=%3B;&q=2", "/orders?next=https://x.example/a?b=c", "/orders?q=%E2%9C%93", "/orders?q=%22%3C%3E",
        "/orders?%66lag",
    ]

    @Test("a target with unusual percent-encoding verifies as signed", arguments: await Edge.matrix())
    func unusualTargets(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let device = try await EdgeDevice.registered(app)
            for target in Self.unusualTargets {
                let answer = try await app.send(
                    "GET", target, headers: try device.headers("GET", target, body: []), body: [])
                #expect(answer.status == 200, "\(target): \(answer)")
            }
            // Signed for one spelling, sent with another that decodes the same: refused, never taken for it.
            let signed = try device.headers("GET", "/orders?q=%7E", body: [])
            let respelled = try await app.send("GET", "/orders?q=~", headers: signed, body: [])
            #expect(respelled.status == 403 && respelled.code == "signature_invalid", "\(respelled)")
        }
    }

    /// URLs as an app writes them: encoded slashes and spaces, semicolons spelled both ways, percent and plus signs,
    /// Unicode (which `URL` percent-encodes as UTF-8), an empty query.
    static let unusualURLs = [
        "https://api.example.com/orders/a%2Fb?x=%20y", "https://api.example.com/orders/a%2fb?x=%2F",
        "https://api.example.com/orders/caf%C3%A9?q=%E2%9C%93", "https://api.example.com/orders/café?q=✓&r=日本",
        "https://api.example.com/orders/%3B?x=%3B", "https://api.example.com/orders/a;b?c;d",
        "https://api.example.com/orders/%3b%3B", "https://api.example.com/orders/%25/~u/a+b?q=%2B+",
        "https://api.example.com/orders/a%20b/?", "https://api.example.com/orders/%F0%9F%93%A6?%",
    ]

    @Test("the target the app-side client signs for a URL is the one the edge verifies", arguments: await Edge.matrix())
    func clientTargets(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let device = try await EdgeDevice.registered(app)
            for string in Self.unusualURLs {
                let url = try #require(URL(string: string), "\(string)")
                // What `AppAttestManager.sign(_:)` binds: the URL's percent-encoded path and query, which is what
                // an HTTP client sends on the request line.
                let target = try #require(AppAttestManager.target(of: url), "\(string)")
                let answer = try await app.send(
                    "GET", target, headers: try device.headers("GET", target, body: []), body: [])
                #expect(
                    answer.status == 200 && String(decoding: answer.body, as: UTF8.self) == device.keyID.base64,
                    "\(string) sent as \(target): \(answer)")
            }
        }
    }
}
