import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitWire
import Crypto
import Foundation
import JWTKit
import NIOHTTP1
import Testing

/// Session tokens through the server's router: `POST /v1/tokens` with an assertion over that very request, the
/// JWKS, a token verified by an independent JWT library (jwt-kit) with the JWKS fetched from the service,
/// `POST /v1/tokens/consume` once; refusals and 503 without a signing key.
@Suite("Token routes")
struct TokenRouteTests {
    static func options() throws -> ServerHarness.Options {
        var options = ServerHarness.Options()
        options.tokens = try TokenService.Configuration(
            signingKey: TokenSigningKey(privateKey: P256.Signing.PrivateKey()), audience: "orders-backend")
        return options
    }

    /// The claims a backend checks with jwt-kit.
    struct BackendClaims: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var jti: IDClaim
        var stepUp: Bool
        var trust: String

        func verify(using _: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
            try aud.verifyIntendedAudience(includes: "orders-backend")
        }
    }

    /// Asks for a token with an assertion over `POST /v1/tokens` and `body`.
    static func requestToken(
        _ harness: ServerHarness, _ device: TestDevice, body: [UInt8] = [], freshness: Freshness? = nil,
        allow5xx: Bool = false
    ) async throws -> (HTTPResult, [(String, String)]) {
        let headers = try device.guardedHeaders(
            method: "POST", target: "/v1/tokens", body: body, freshness: freshness ?? device.now)
        let answer = try await harness.send(
            .POST, "/v1/tokens", body: body.isEmpty ? nil : body, headers: headers, allow5xx: allow5xx)
        return (answer, headers)
    }

    @Test(
        "issued for an assertion over the request, verified with the JWKS by jwt-kit, consumed once",
        arguments: await StoreKind.all())
    func issueVerifyConsume(kind: StoreKind) async throws {
        try await ServerHarness.with(kind, try Self.options()) { harness in
            let device = try await TestDevice.registered(harness)
            let (answer, headers) = try await Self.requestToken(
                harness, device, body: Array("{\"scope\":\"pay\"}".utf8))
            try #require(answer.status == 201, "\(answer)")
            let token = try #require(answer.string("token"))
            #expect(answer.string("expiresAt") != nil)

            // The same assertion again is a replay, whichever route it is sent to.
            let replay = try await harness.send(
                .POST, "/v1/tokens", body: Array("{\"scope\":\"pay\"}".utf8), headers: headers)
            #expect(replay.status == 409 && replay.errorCode == "counter_not_increasing", "\(replay)")

            let jwks = try await harness.get("/.well-known/jwks.json")
            #expect(jwks.status == 200 && jwks.header("Cache-Control") == "public, max-age=300", "\(jwks)")
            let keys = try await JWTKeyCollection().add(jwksJSON: jwks.text)
            let claims = try await keys.verify(token, as: BackendClaims.self)
            #expect(claims.iss.value == "attestkit")
            #expect(claims.stepUp == false)
            #expect(claims.trust == "app_attest")
            let subject = try #require(TokenRouteTests.base64URL(claims.sub.value))
            #expect(subject == device.keyID.bytes)

            let consumed = try await harness.post(
                "/v1/tokens/consume", .object([.init(key: "token", value: .string(token))]))
            #expect(consumed.status == 200 && consumed.string("jti") == claims.jti.value, "\(consumed)")
            #expect(consumed.string("appId") == Fixture.appID.description)
            let again = try await harness.post(
                "/v1/tokens/consume", .object([.init(key: "token", value: .string(token))]))
            #expect(again.status == 409 && again.errorCode == "token_consumed", "\(again)")
        }
    }

    /// `POST /v1/tokens/introspect` with `token`.
    static func introspect(_ harness: ServerHarness, _ token: String) async throws -> HTTPResult {
        try await harness.post("/v1/tokens/introspect", .object([.init(key: "token", value: .string(token))]))
    }

    /// Revocation reaches tokens: a revoked key's token still verifies offline against the JWKS (until `exp`), but
    /// introspection answers `{"active": false}` and nothing else; a live token is active with its claims and stays
    /// consumable (introspection consumes nothing), then inactive once consumed; garbage and expired tokens are
    /// inactive; backend only.
    @Test(
        "introspection: live active and unconsumed; consumed, revoked, expired or garbage inactive",
        arguments: await StoreKind.all())
    func introspection(kind: StoreKind) async throws {
        try await ServerHarness.with(kind, try Self.options()) { harness in
            let device = try await TestDevice.registered(harness)
            let (first, _) = try await Self.requestToken(harness, device)
            let token = try #require(first.string("token"))
            let live = try await Self.introspect(harness, token)
            #expect(live.status == 200 && live.bool("active") == true, "\(live)")
            #expect(live.string("tokenType") == "session_token" && live.string("appId") == Fixture.appID.description)
            #expect(live.string("trust") == "app_attest" && live.has("jti") && live.has("exp"))
            // Introspection consumed nothing: the token is still consumed once.
            let consumed = try await harness.post(
                "/v1/tokens/consume", .object([.init(key: "token", value: .string(token))]))
            #expect(consumed.status == 200, "\(consumed)")
            // Consumed: inactive from then on.
            let spent = try await Self.introspect(harness, token)
            #expect(spent.status == 200 && spent.text == #"{"active":false}"#, "\(spent)")

            // Backend only.
            let app = try await harness.post(
                "/v1/tokens/introspect", .object([.init(key: "token", value: .string(token))]),
                headers: [("Authorization", "Bearer app")])
            #expect(app.status == 401 && app.errorCode == "backend_unauthorized", "\(app)")

            let forged = String(token.dropLast(2)) + (token.hasSuffix("AA") ? "BA" : "AA")
            for garbage in [forged, "a.b.c", "", String(repeating: "x", count: 5_000)] {
                let answer = try await Self.introspect(harness, garbage)
                #expect(answer.status == 200 && answer.text == #"{"active":false}"#, "\(answer)")
            }
            let hint = try await harness.post(
                "/v1/tokens/introspect", ["token": .string(token), "tokenTypeHint": .string("refresh_token")])
            #expect(hint.status == 400 && hint.errorCode == "invalid_field", "\(hint)")

            // Revoked: the signature and exp still verify offline, introspection says inactive.
            let (second, _) = try await Self.requestToken(harness, device)
            let revokedToken = try #require(second.string("token"))
            let revoke = try await harness.post(
                "/v1/keys/\(device.keyID.pathComponent)/revoke", .raw(""), headers: ServerHarness.admin)
            #expect(revoke.status == 200, "\(revoke)")
            let jwks = try await harness.get("/.well-known/jwks.json")
            let keys = try await JWTKeyCollection().add(jwksJSON: jwks.text)
            _ = try await keys.verify(revokedToken, as: BackendClaims.self)
            let revoked = try await Self.introspect(harness, revokedToken)
            #expect(revoked.status == 200 && revoked.text == #"{"active":false}"#, "\(revoked)")

            // Expired: another key's live token, then past its exp.
            let other = try await TestDevice.registered(harness)
            let (third, _) = try await Self.requestToken(harness, other)
            let expiring = try #require(third.string("token"))
            #expect(try await Self.introspect(harness, expiring).bool("active") == true)
            harness.clock.advance(by: 900)
            let expired = try await Self.introspect(harness, expiring)
            #expect(expired.status == 200 && expired.text == #"{"active":false}"#, "\(expired)")
        }
    }

    @Test("refusals: no assertion 401, tampered body 403, forged or expired token 401, app credential 401")
    func refusals() async throws {
        try await ServerHarness.with(.sqlite, try Self.options()) { harness in
            let device = try await TestDevice.registered(harness)
            let none = try await harness.send(.POST, "/v1/tokens")
            #expect(none.status == 401 && none.errorCode == "assertion_required", "\(none)")
            let headers = try device.guardedHeaders(
                method: "POST", target: "/v1/tokens", body: Array("{}".utf8), freshness: device.now)
            let tampered = try await harness.send(.POST, "/v1/tokens", body: Array("{\"a\":1}".utf8), headers: headers)
            #expect(tampered.status == 403 && tampered.errorCode == "signature_invalid", "\(tampered)")
            // An assertion made for another route does not buy a token.
            let other = try device.guardedHeaders(
                method: "POST", target: "/api/orders", body: [], freshness: device.now)
            let elsewhere = try await harness.send(.POST, "/v1/tokens", headers: other)
            #expect(elsewhere.status == 403 && elsewhere.errorCode == "signature_invalid", "\(elsewhere)")

            let (issued, _) = try await Self.requestToken(harness, device)
            let token = try #require(issued.string("token"))
            let forged = String(token.dropLast(2)) + (token.hasSuffix("AA") ? "BA" : "AA")
            for (text, code) in [(forged, "token_invalid"), ("a.b.c", "token_invalid"), ("", "token_invalid")] {
                let answer = try await harness.post(
                    "/v1/tokens/consume", .object([.init(key: "token", value: .string(text))]))
                #expect(answer.status == 401 && answer.errorCode == code, "\(answer)")
            }
            // Consumption is a backend route: without the backend token, nothing is consumed.
            let app = try await harness.post(
                "/v1/tokens/consume", .object([.init(key: "token", value: .string(token))]),
                headers: [("Authorization", "Bearer app")])
            #expect(app.status == 401 && app.errorCode == "backend_unauthorized", "\(app)")
            harness.clock.advance(by: 3_600)
            let expired = try await harness.post(
                "/v1/tokens/consume", .object([.init(key: "token", value: .string(token))]))
            #expect(expired.status == 401 && expired.errorCode == "token_expired", "\(expired)")
        }
    }

    @Test("without a signing key every token route answers 503 tokens_not_configured and no counter moves")
    func notConfigured() async throws {
        try await ServerHarness.with(.sqlite) { harness in
            let device = try await TestDevice.registered(harness)
            let (answer, _) = try await Self.requestToken(harness, device, allow5xx: true)
            #expect(answer.status == 503 && answer.errorCode == "tokens_not_configured", "\(answer)")
            let jwks = try await harness.get("/.well-known/jwks.json", allow5xx: true)
            #expect(jwks.status == 503 && jwks.errorCode == "tokens_not_configured", "\(jwks)")
            let consume = try await harness.post(
                "/v1/tokens/consume", .object([.init(key: "token", value: .string("a.b.c"))]), allow5xx: true)
            #expect(consume.status == 503 && consume.errorCode == "tokens_not_configured", "\(consume)")
            // Refused before the assertion was read: the key's counter did not move.
            let record = try #require(try await harness.store.key(device.keyID))
            #expect(record.counter == 0)
        }
    }

    static func base64URL(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
