import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Crypto
import Foundation
import JWTKit
import Testing

/// Session tokens bought with a debug token instead of an assertion: trust `debug` in the claims, a fingerprint for
/// the subject, refused for a token off the list, with no app or several, once the debug token is withdrawn, and a
/// token claiming a trust level no token is issued at is refused even when correctly signed.
@Suite("Session tokens for debug tokens")
struct DebugTokenSessionTests {
    static let debugToken = "a-debug-token-of-the-simulator-build-0001"
    static let otherDebugToken = "a-debug-token-of-the-ci-runners-build-0002"

    static func service(
        debugTokens: [String] = [debugToken, otherDebugToken], key: P256.Signing.PrivateKey = .init(),
        store: any AttestationStore = MemoryAttestationStore()
    ) throws -> TokenService {
        TokenService(
            configuration: try TokenService.Configuration(signingKey: TokenSigningKey(privateKey: key)),
            store: store, debugTokens: try DebugTokens(debugTokens, environments: .development))
    }

    @Test("a debug token buys a token at trust debug: a fingerprint for sub, development, the one app, risk unknown")
    func issued() async throws {
        let service = try Self.service()
        let issued = try service.issue(debugToken: Self.debugToken, appIDs: [FlowBench.appID])
        let keys = try await JWTKeyCollection().add(
            jwksJSON: String(decoding: try JSONEncoder().encode(service.keySet), as: UTF8.self))
        let claims = try await keys.verify(issued.token, as: TokenServiceTests.CheckedClaims.self)
        #expect(claims.trust == "debug")
        #expect(claims.environment == "development")
        #expect(claims.appId == FlowBench.appID.description)
        #expect(claims.riskStatus == "unknown" && claims.stepUp == false)
        // The subject names the debug token without revealing it: SHA-256's first 16 bytes, never the token.
        let digest = Array(SHA256.hash(data: Array(Self.debugToken.utf8)).prefix(16))
        #expect(claims.sub.value == "debug:" + TokenServiceTests.encode(digest))
        #expect(!issued.token.contains(Self.debugToken))
        #expect(try service.verify(issued.token) == issued.claims)
        // Each debug token has its own fingerprint.
        let other = try service.issue(debugToken: Self.otherDebugToken, appIDs: [FlowBench.appID])
        #expect(other.claims.sub != issued.claims.sub && other.claims.sub.hasPrefix("debug:"))
        // Consumed once, like any token: no key is looked up for it.
        #expect(try await service.consume(issued.token).trust == "debug")
        await #expect(throws: FlowError.tokenConsumed) { try await service.consume(issued.token) }
    }

    /// A token that names no key is checked against the store only for its consumption: once consumed it is
    /// inactive, and a store that cannot answer is 503, never "active".
    @Test("a debug-trust token introspects active, inactive once consumed, and storage_unavailable with the store down")
    func introspection() async throws {
        let store = MemoryAttestationStore()
        let service = try Self.service(store: store)
        let issued = try service.issue(debugToken: Self.debugToken, appIDs: [FlowBench.appID])
        #expect(try await service.introspect(issued.token) == TokenIntrospectionResponse(claims: issued.claims))
        _ = try await service.consume(issued.token)
        #expect(try await service.introspect(issued.token) == .inactive)

        let live = try service.issue(debugToken: Self.otherDebugToken, appIDs: [FlowBench.appID])
        await store.close()
        let error = await #expect(throws: FlowError.self) { try await service.introspect(live.token) }
        #expect(error?.code.rawValue == "storage_unavailable" && error?.kind == .unavailable(retryAfter: nil))
    }

    @Test(
        "a debug token off the list, a prefix or an extension of one, or any with no list: debug_token_invalid",
        arguments: [
            "a-debug-token-of-the-simulator-build-000", "a-debug-token-of-the-simulator-build-00011",
            "A-DEBUG-TOKEN-OF-THE-SIMULATOR-BUILD-0001", "", String(repeating: "x", count: 10_000),
        ])
    func refused(presented: String) throws {
        let error = #expect(throws: FlowError.self) {
            try Self.service().issue(debugToken: presented, appIDs: [FlowBench.appID])
        }
        #expect(error?.code == .debugTokenInvalid && error?.kind == .unauthenticated)
        let none = TokenService(
            configuration: try TokenService.Configuration(signingKey: TokenSigningKey(privateKey: .init())),
            store: MemoryAttestationStore())
        #expect(none.debugTokens.isEmpty)
        let noList = #expect(throws: FlowError.self) {
            try none.issue(debugToken: Self.debugToken, appIDs: [FlowBench.appID])
        }
        #expect(noList?.code == .debugTokenInvalid)
    }

    @Test("with no app or several the token could not name its app: debug_token_app_ambiguous")
    func ambiguousApp() throws {
        let another = try AppID("ABCDE12345.com.example.other")
        for apps in [[], [FlowBench.appID, another]] {
            let error = #expect(throws: FlowError.self) {
                try Self.service().issue(debugToken: Self.debugToken, appIDs: apps)
            }
            #expect(error?.code == .debugTokenAppAmbiguous && error?.kind == .notConfigured)
        }
    }

    @Test("a debug token taken off the list takes its session tokens with it; the others stay valid")
    func withdrawn() async throws {
        let key = P256.Signing.PrivateKey()
        let store = MemoryAttestationStore()
        let before = try Self.service(key: key, store: store)
        let withdrawn = try before.issue(debugToken: Self.debugToken, appIDs: [FlowBench.appID])
        let kept = try before.issue(debugToken: Self.otherDebugToken, appIDs: [FlowBench.appID])
        let after = try Self.service(debugTokens: [Self.otherDebugToken], key: key, store: store)
        let error = #expect(throws: FlowError.self) { try after.verify(withdrawn.token) }
        #expect(error?.code == .tokenInvalid)
        await #expect(throws: FlowError.self) { try await after.consume(withdrawn.token) }
        #expect(try after.verify(kept.token) == kept.claims)
        // A service without debug tokens honours none of them.
        let none = try Self.service(debugTokens: [], key: key, store: store)
        #expect(throws: FlowError.self) { try none.verify(kept.token) }
    }

    @Test(
        "claims signed by the service's own key with a trust level no token is issued at are refused",
        arguments: [#""trust":"devicecheck","#, #""trust":"App_Attest","#, #""trust":"","#, ""])
    func unknownTrust(trustMember: String) throws {
        let key = P256.Signing.PrivateKey()
        let service = try Self.service(key: key)
        let now = Int64(Date().timeIntervalSince1970)
        let payload =
            #"{"iss":"attestkit","aud":"attestkit","sub":"debug:x","iat":\#(now),"exp":\#(now + 600),"jti":"j","#
            + #""appId":"\#(FlowBench.appID)","environment":"development","riskStatus":"unknown",\#(trustMember)"#
            + #""stepUp":false}"#
        let header = #"{"alg":"ES256","kid":"\#(service.configuration.signingKey.kid)","typ":"JWT"}"#
        let input = TokenServiceTests.encode(Array(header.utf8)) + "." + TokenServiceTests.encode(Array(payload.utf8))
        let signature = try key.signature(for: Array(input.utf8)).rawRepresentation
        let token = input + "." + TokenServiceTests.encode(signature)
        let error = #expect(throws: FlowError.self) { try service.verify(token) }
        #expect(error?.code == .tokenInvalid)
        // The same claims with trust debug and the fingerprint of a listed token verify: the refusal is the trust.
        let genuine = try service.issue(debugToken: Self.debugToken, appIDs: [FlowBench.appID])
        #expect(try service.verify(genuine.token).trust == "debug")
    }
}
