import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitWire
import Crypto
import Foundation
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Session tokens against a real `attestkit serve` with a P-256 signing key the test generated: the token
/// verifies with the service's JWKS and names the key, concurrent callers share one, and a limited-use token the
/// backend consumed is replaced once.
@Suite("AttestKitClient session tokens end to end against attestkit serve", .serialized, .timeLimit(.minutes(3)))
struct SessionTokenEndToEndTests {
    typealias App = EndToEndTests.App

    @Test("ten concurrent callers share one token; it verifies with the JWKS, names the key, and is cached")
    func issued() async throws {
        let signingKey = P256.Signing.PrivateKey()
        try await ServiceProcess.with(apple: EndToEndTests.apple, tokenKey: signingKey) { service in
            let app = App(service: service)
            let tokens = try await withThrowingTaskGroup(of: SessionToken.self) { group in
                for _ in 0..<10 { group.addTask { try await app.client.sessionToken() } }
                return try await group.reduce(into: [SessionToken]()) { $0.append($1) }
            }
            #expect(tokens.count == 10 && Set(tokens).count == 1)
            #expect(app.backend.serviceCalls("/v1/tokens") == 1)
            #expect(app.provider.calls.attestKey == 1)
            let token = try #require(tokens.first)

            let keys = try await JWS.keySet(of: service)
            #expect(keys.keys.count == 1)
            let claims = try JWS.verify(token.token, with: keys)
            let published = try #require(keys.keys.first)
            #expect(JWS.data(published.x) + JWS.data(published.y) == signingKey.publicKey.rawRepresentation)
            let keyID = try #require(app.keyStore.registeredKeyID)
            #expect(claims.sub == JWS.base64url(try #require(Data(base64Encoded: keyID))))
            #expect(claims.appId == ServiceProcess.appID.description && claims.iss == "attestkit")
            // Counted on the device's clock from the answer's `Date` (whole seconds) and its arrival: within a
            // few seconds of the claim on a loaded machine, never the token's lifetime off.
            #expect(abs(Double(claims.exp) - token.expiresAt.timeIntervalSince1970) < 5)

            #expect(try await app.client.sessionToken() == token)
            #expect(app.backend.serviceCalls("/v1/tokens") == 1)
            // The assertion over POST /v1/tokens advanced the key's counter like any other.
            #expect(try await app.order() == 2)
        }
    }

    @Test("a limited-use token the backend consumed (409 token_consumed) is replaced once and the request sent again")
    func consumed() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple, tokenKey: P256.Signing.PrivateKey()) { service in
            let app = App(service: service)
            let (first, _) = try await app.client.data(withSessionToken: AppBackend.reward())
            let (second, _) = try await app.client.data(withSessionToken: AppBackend.reward())
            let firstClaims = try WireJSON.decode(TokenClaims.self, from: first)
            let secondClaims = try WireJSON.decode(TokenClaims.self, from: second)
            #expect(firstClaims.jti != secondClaims.jti && firstClaims.sub == secondClaims.sub)
            #expect(app.backend.serviceCalls("/v1/tokens") == 2)
            #expect(app.backend.outcomes.map(\.status) == [200, 409, 200])
            #expect(app.backend.outcomes.map(\.code) == [nil, "token_consumed", nil])
            #expect(app.provider.calls.attestKey == 1)
        }
    }

    @Test("a debug build buys a session token with its debug token (trust debug); the device never attests")
    func debugToken() async throws {
        let debugToken = "client-e2e-debug-token-0123456789abcdef"
        try await ServiceProcess.with(
            apple: EndToEndTests.apple, tokenKey: P256.Signing.PrivateKey(), debugTokens: [debugToken]
        ) { service in
            let app = App(service: service, debugToken: debugToken)
            let token = try await app.client.sessionToken()
            let claims = try JWS.verify(token.token, with: try await JWS.keySet(of: service))
            #expect(claims.trust == "debug" && claims.sub.hasPrefix("debug:"))
            #expect(!token.token.contains(debugToken) && !claims.sub.contains(debugToken))
            #expect(app.provider.calls.attestKey == 0 && app.provider.calls.generateKey == 0)

            let stranger = App(service: service, debugToken: "not-the-deployments-debug-token-0123456789")
            let error = await #expect(throws: AttestKitClientError.self) { try await stranger.client.sessionToken() }
            #expect(error?.serviceCode == "debug_token_invalid")
        }
    }

    @Test("without a signing key the service answers 503 tokens_not_configured, as a typed error")
    func notConfigured() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple) { service in
            let app = App(service: service)
            let error = await #expect(throws: AttestKitClientError.self) { try await app.client.sessionToken() }
            #expect(error?.code == .httpError && error?.status == 503)
            #expect(error?.serviceCode == "tokens_not_configured")
        }
    }
}

/// The test's own check of a compact JWS (ES256) against a JWKS, with swift-crypto only.
enum JWS {
    static func keySet(of service: URL) async throws -> JSONWebKeySet {
        let request = URLRequest(url: service.appendingPathComponent(".well-known/jwks.json"))
        let (data, response) = try await URLSessionTransport().send(request)
        #expect(response.statusCode == 200)
        return try WireJSON.decode(JSONWebKeySet.self, from: data)
    }

    static func verify(_ token: String, with keys: JSONWebKeySet) throws -> TokenClaims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        struct Header: Decodable { let alg: String, kid: String }
        let header = try JSONDecoder().decode(Header.self, from: data(parts[0]))
        #expect(header.alg == "ES256")
        let key = try #require(keys.keys.first { $0.kid == header.kid })
        let publicKey = try P256.Signing.PublicKey(rawRepresentation: data(key.x) + data(key.y))
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: data(parts[2]))
        #expect(publicKey.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8)))
        return try WireJSON.decode(TokenClaims.self, from: data(parts[1]))
    }

    /// The bytes of base64url without padding (empty for anything else).
    static func data(_ text: String) -> Data {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64) ?? Data()
    }

    static func base64url(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
