import AttestKit
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import Crypto
import Foundation
import Testing

extension KeyLifecycleRouteTests {
    @Test(
        "keys.expire-after reaches what a key earned: its session token and app key certificate stop at the cutoff",
        arguments: await StoreKind.all())
    func expiryReachesDerivedCredentials(kind: StoreKind) async throws {
        var options = try TokenRouteTests.options()
        options.keyAttestationAuthority = try KeyAttestationRouteTests.authority().0
        options.keyExpiry = 600  // shorter than a token's 900 s and a certificate's hour
        try await ServerHarness.with(kind, options) { harness in
            let device = TestDevice(harness)
            let (body, _) = try await KeyAttestationRouteTests.body(
                harness, device, boundKey: Array(P256.Signing.PrivateKey().publicKey.derRepresentation))
            let certified = try await harness.post("/v1/key-attestations", body)
            try #require(certified.status == 201, "\(certified)")
            let certificate = try #require(certified.string("appKey.certificate"))
            let (issued, _) = try await TokenRouteTests.requestToken(harness, device)
            try #require(issued.status == 201, "\(issued)")
            let token = try #require(issued.string("token"))
            func introspect(_ text: String, hint: String) async throws -> Bool? {
                try await harness.post(
                    "/v1/tokens/introspect", ["token": .string(text), "tokenTypeHint": .string(hint)]
                )
                .bool("active")
            }

            harness.clock.advance(by: 599)
            #expect(try await introspect(token, hint: "session_token") == true)
            #expect(try await introspect(certificate, hint: "app_key_certificate") == true)

            harness.clock.advance(by: 2)
            #expect(try await introspect(token, hint: "session_token") == false)
            #expect(try await introspect(certificate, hint: "app_key_certificate") == false)
            let consumed = try await harness.post("/v1/tokens/consume", ["token": .string(token)])
            #expect(consumed.status == 403 && consumed.errorCode == "key_expired", "\(consumed)")
        }
    }
}

extension KeyLifecycleRouteTests {
    @Test(
        "an expired key's receipt is not traded: keys.expire-after shorter than receipt-refresh.active-within wins",
        arguments: await StoreKind.all())
    func expiredKeysAreNotRefreshed(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.keyExpiry = 7 * Self.day  // active-within stays at its 30 days
        try await ServerHarness.with(kind, options) { harness in
            let idle = try await TestDevice.registered(harness)
            let refresh = try #require(harness.server.receiptRefresh)
            harness.clock.advance(by: 8 * Self.day)
            let refused = try await idle.verify(try idle.verifyBody(freshness: idle.now))
            #expect(refused.status == 403 && refused.errorCode == "key_expired", "\(refused)")
            let round = await refresh.round()
            #expect(round.refreshed == 0 && !round.backedOff, "\(round)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 0)
        }
    }
}
