import AttestKit
import AttestKitClient
import AttestKitClientSimulator
import AttestKitTesting
import AttestKitWire
import Crypto
import Foundation
import Testing
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Session tokens against a real `attestkit serve` with a P-256 signing key the test generated: the token
/// verifies with the service's JWKS and names the key, concurrent callers share one, a limited-use token the
/// backend consumed is replaced once, and a token of a key the service no longer takes (deleted, expired, revoked)
/// gets a new key as an assertion of that key would.
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

    @Test("a token of a key the operator deleted (403 key_not_found relayed) gets a new key, a new token, one more try")
    func deletedKey() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple, tokenKey: P256.Signing.PrivateKey()) { service in
            let app = App(service: service)
            let (first, _) = try await app.client.data(withSessionToken: AppBackend.reward())
            let oldKey = try #require(app.keyStore.registeredKeyID)
            #expect(try await Operator.keys("DELETE", oldKey, on: service) == 204)

            // The cached token names the deleted key: the service's consumption refuses it as key_not_found, the
            // backend relays that, and the client replaces the key as an assertion's refusal would have.
            let (second, _) = try await app.client.data(withSessionToken: AppBackend.reward())
            let newKey = try #require(app.keyStore.registeredKeyID)
            #expect(newKey != oldKey)
            #expect(try WireJSON.decode(TokenClaims.self, from: first).sub == Operator.subject(of: oldKey))
            #expect(try WireJSON.decode(TokenClaims.self, from: second).sub == Operator.subject(of: newKey))
            #expect(app.backend.outcomes.map(\.status) == [200, 403, 200])
            #expect(app.backend.outcomes.map(\.code) == [nil, "key_not_found", nil])
            #expect(app.backend.serviceCalls("/v1/tokens") == 2)
            #expect(app.provider.calls.attestKey == 2 && app.provider.calls.generateKey == 2)
            #expect(await app.manager.attestationCount == 2)
            #expect(try await Operator.keys("GET", oldKey, on: service) == 404)
            #expect(try await Operator.keys("GET", newKey, on: service) == 200)
            // The new key stays: the next call (its cached token consumed already, so one more bought) uses it.
            let (third, _) = try await app.client.data(withSessionToken: AppBackend.reward())
            #expect(try WireJSON.decode(TokenClaims.self, from: third).sub == Operator.subject(of: newKey))
            #expect(app.backend.outcomes.suffix(2).map(\.code) == ["token_consumed", nil])
            #expect(app.keyStore.registeredKeyID == newKey && app.provider.calls.attestKey == 2)
        }
    }

    @Test("a token of a key unused for longer than keys.expire-after (403 key_expired relayed) gets a new key")
    func expiredKey() async throws {
        try await ServiceProcess.with(
            apple: EndToEndTests.apple, tokenKey: P256.Signing.PrivateKey(), settings: ["keys.expire-after=3"]
        ) { service in
            let app = App(service: service)
            _ = try await app.client.data(withSessionToken: AppBackend.reward())
            let oldKey = try #require(app.keyStore.registeredKeyID)
            // The service's clock is the wall clock: the key goes unused for longer than 3 seconds, the token
            // (15 minutes) stays cached.
            try await Task.sleep(for: .seconds(4))

            let (data, _) = try await app.client.data(withSessionToken: AppBackend.reward())
            let newKey = try #require(app.keyStore.registeredKeyID)
            #expect(newKey != oldKey)
            #expect(try WireJSON.decode(TokenClaims.self, from: data).sub == Operator.subject(of: newKey))
            #expect(app.backend.outcomes.map(\.code) == [nil, "key_expired", nil])
            #expect(app.provider.calls.attestKey == 2)
        }
    }

    @Test("a token of a revoked key (403 key_revoked relayed) is reported as key_revoked; the key stays revoked")
    func revokedKey() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple, tokenKey: P256.Signing.PrivateKey()) { service in
            let app = App(service: service)
            _ = try await app.client.data(withSessionToken: AppBackend.reward())
            let oldKey = try #require(app.keyStore.registeredKeyID)
            #expect(try await Operator.keys("POST", oldKey, "/revoke", on: service) == 200)

            // As for an assertion refused as key_revoked: reported, and the operator's revocation holds.
            let error = await #expect(throws: AttestKitClientError.self) {
                try await app.client.data(withSessionToken: AppBackend.reward())
            }
            #expect(error?.code == .keyRevoked && error?.status == 403 && error?.serviceCode == "key_revoked")
            #expect(app.backend.outcomes.map(\.code) == [nil, "key_revoked"])
            // The token of the revoked key was dropped, and no new key is attested: the next call fails on the
            // device, before reaching the backend.
            let again = await #expect(throws: AttestKitClientError.self) {
                try await app.client.data(withSessionToken: AppBackend.reward())
            }
            #expect(again?.code == .keyRevoked)
            #expect(app.backend.outcomes.count == 2 && app.backend.serviceCalls("/v1/tokens") == 1)
            #expect(app.provider.calls.attestKey == 1)

            try await app.manager.resetKey()
            let (data, _) = try await app.client.data(withSessionToken: AppBackend.reward())
            let newKey = try #require(app.keyStore.registeredKeyID)
            #expect(newKey != oldKey)
            #expect(try WireJSON.decode(TokenClaims.self, from: data).sub == Operator.subject(of: newKey))
        }
    }

    @Test("with reattestAfterRevocation, a token of a revoked key gets a new key, a new token and one more try")
    func revokedKeyReattested() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple, tokenKey: P256.Signing.PrivateKey()) { service in
            let app = App(service: service, reattestAfterRevocation: true)
            _ = try await app.client.data(withSessionToken: AppBackend.reward())
            let oldKey = try #require(app.keyStore.registeredKeyID)
            #expect(try await Operator.keys("POST", oldKey, "/revoke", on: service) == 200)

            let (data, _) = try await app.client.data(withSessionToken: AppBackend.reward())
            let newKey = try #require(app.keyStore.registeredKeyID)
            #expect(newKey != oldKey)
            #expect(try WireJSON.decode(TokenClaims.self, from: data).sub == Operator.subject(of: newKey))
            #expect(app.backend.outcomes.map(\.code) == [nil, "key_revoked", nil])
            #expect(app.backend.serviceCalls("/v1/tokens") == 2 && app.provider.calls.attestKey == 2)
        }
    }

    @Test("a second key-gone answer in one call is thrown, not answered with yet another key")
    func keyGoneTwice() async throws {
        try await ServiceProcess.with(apple: EndToEndTests.apple, tokenKey: P256.Signing.PrivateKey()) { service in
            let app = App(service: service)
            // An operator who deletes the app's current key before every reward request reaches the backend.
            let erasing = ErasingBackend(backend: app.backend, keyStore: app.keyStore, service: service)
            let client = AttestKitHTTPClient(manager: app.manager, strategy: .appAttestOnly, transport: erasing)

            let error = await #expect(throws: AttestKitClientError.self) {
                try await client.data(withSessionToken: AppBackend.reward())
            }
            #expect(error?.code == .httpError && error?.status == 403 && error?.serviceCode == "key_not_found")
            #expect(app.backend.outcomes.map(\.code) == ["key_not_found", "key_not_found"])
            #expect(app.backend.serviceCalls("/v1/tokens") == 2)
            #expect(app.provider.calls.attestKey == 2)
            // The second key is known to be gone as well: the next call attests a third rather than sending a token
            // of the second.
            #expect(app.keyStore.registeredKeyID == nil)
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

extension EndToEndTests.App {
    /// A simulated app whose manager attests a new key on its own after a revocation.
    init(service: URL, reattestAfterRevocation: Bool) {
        provider = SimulatedAppAttestProvider(
            device: SimulatedDevice(
                apple: EndToEndTests.apple, configuration: .init(appID: ServiceProcess.appID, environment: .development)
            ))
        keyStore = MemoryKeyIDStore()
        backend = AppBackend(service: service)
        manager = AppAttestManager(
            provider: provider, keyStore: keyStore, service: AttestKitService(baseURL: service, transport: backend),
            configuration: .init(
                reattestAfterRevocation: reattestAfterRevocation, initialBackoff: 0.01, maximumBackoff: 0.05))
        client = AttestKitHTTPClient(manager: manager, strategy: .appAttestOnly, transport: backend)
    }
}

/// The operator's calls on a key of the service, with its admin token.
enum Operator {
    /// `method` on `/v1/keys/{keyId}` followed by `suffix` (`/revoke`); the answer's status.
    static func keys(_ method: String, _ keyID: String, _ suffix: String = "", on service: URL) async throws -> Int {
        // The key's one spelling, percent-encoded (appendingPathComponent would encode the `%` again).
        let path = "v1/keys/" + (keyID.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + suffix
        let base = service.absoluteString.hasSuffix("/") ? service.absoluteString : service.absoluteString + "/"
        var request = URLRequest(url: try #require(URL(string: base + path)))
        request.httpMethod = method
        request.setValue("Bearer \(ServiceProcess.adminToken)", forHTTPHeaderField: "Authorization")
        return try await URLSessionTransport().send(request).1.statusCode
    }

    /// The `sub` claim of a token bought with the key `keyID`.
    static func subject(of keyID: String) throws -> String {
        JWS.base64url(try #require(Data(base64Encoded: keyID)))
    }
}

/// The app's backend behind an operator who deletes the app's current key before every reward request reaches it.
struct ErasingBackend: HTTPTransport {
    let backend: AppBackend
    let keyStore: MemoryKeyIDStore
    let service: URL

    func send(_ request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        if request.url?.path == "/v1/rewards", let keyID = keyStore.registeredKeyID {
            #expect(try await Operator.keys("DELETE", keyID, on: service) == 204)
        }
        return try await backend.send(request)
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
