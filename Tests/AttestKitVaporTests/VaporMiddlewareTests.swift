import AttestKitVapor
import NIOCore
import NIOHTTP1
import Testing
import Vapor
import VaporTesting

/// What only the Vapor integration has to show. Accepted once, replay 409, tampered 403, missing headers 401 and
/// revoked 403 are the shared suite's (AttestKitEdgeTests, GuardedRouteTests: both edges, both SQL stores).
@Suite("Vapor")
struct VaporMiddlewareTests {
    @Test("a malformed challenge request is the service's 400 envelope")
    func malformedChallenge() async throws {
        try await VaporBench.withApplication { app in
            try await app.testing().test(.POST, "/v1/challenges", body: ByteBuffer(string: #"{"purpose":"x"}"#)) {
                #expect($0.status == .badRequest)
                #expect(VaporBench.code($0) == "invalid_field")
                #expect($0.headers.first(name: "Cache-Control") == "no-store")
            }
        }
    }
}
