import AttestKit
import AttestKitStore
import AttestKitVapor
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import Vapor
import VaporTesting

/// The behaviour of the Vapor integration on SQLite and PostgreSQL: keys registered through the route
/// collection, a route guarded by the middleware.
@Suite("Vapor", .serialized)
struct VaporMiddlewareTests {
    @Test("challenge and attestation through the routes; a guarded route accepted once; its replay 409")
    func acceptedOnceThenReplay() async throws {
        for backend in await VaporBench.backends() {
            try await VaporBench.withApplication(backend) { app in
                let (device, keyID) = try await VaporBench.register(app)
                let body = #"{"item":1}"#
                let headers = try VaporBench.assertionHeaders(device, keyID, body: body)
                try await app.testing().test(.POST, "/orders", headers: headers, body: ByteBuffer(string: body)) {
                    #expect($0.status == .ok, "\(backend)")
                    #expect(String(buffer: $0.body) == keyID.base64)
                }
                try await app.testing().test(.POST, "/orders", headers: headers, body: ByteBuffer(string: body)) {
                    #expect($0.status == .conflict, "\(backend)")
                    #expect(VaporBench.code($0) == "counter_not_increasing")
                }
            }
        }
    }

    @Test("a tampered body 403; missing headers 401; a revoked key 403")
    func refusals() async throws {
        for backend in await VaporBench.backends() {
            try await VaporBench.withApplication(backend) { app in
                let (device, keyID) = try await VaporBench.register(app)
                let headers = try VaporBench.assertionHeaders(device, keyID, body: #"{"item":1}"#)
                try await app.testing().test(
                    .POST, "/orders", headers: headers, body: ByteBuffer(string: #"{"item":2}"#)
                ) {
                    #expect($0.status == .forbidden, "\(backend)")
                    #expect(VaporBench.code($0) == "signature_invalid")
                }
                try await app.testing().test(.POST, "/orders", body: ByteBuffer(string: "{}")) {
                    #expect($0.status == .unauthorized, "\(backend)")
                    #expect(VaporBench.code($0) == "assertion_required")
                }
                let store = try #require(app.attestKit?.store)
                _ = try await store.revokeKey(keyID, now: Date())
                let fresh = try VaporBench.assertionHeaders(device, keyID, body: "{}")
                try await app.testing().test(.POST, "/orders", headers: fresh, body: ByteBuffer(string: "{}")) {
                    #expect($0.status == .forbidden, "\(backend)")
                    #expect(VaporBench.code($0) == "key_revoked")
                }
            }
        }
    }

    @Test("a malformed challenge request is the service's 400 envelope")
    func malformedChallenge() async throws {
        try await VaporBench.withApplication("sqlite") { app in
            try await app.testing().test(.POST, "/v1/challenges", body: ByteBuffer(string: #"{"purpose":"x"}"#)) {
                #expect($0.status == .badRequest)
                #expect(VaporBench.code($0) == "invalid_field")
                #expect($0.headers.first(name: "Cache-Control") == "no-store")
            }
        }
    }
}
