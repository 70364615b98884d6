import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitWire
import Crypto
import Foundation
import JWTKit
import Synchronization
import Testing

/// Session tokens without HTTP: issued after an accepted assertion, checked by an independent JWT library (jwt-kit)
/// against the JWKS, refused in every malformed, forged, foreign or expired form, consumed once.
struct TokenServiceTests {
    /// A clock tests move.
    final class Clock: Sendable {
        private let time = Mutex(Date())
        var now: Date { time.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
        var closure: @Sendable () -> Date { { self.now } }
    }

    /// The claims as jwt-kit checks them: signature (by the JWKS), expiry, issuer and audience.
    struct CheckedClaims: JWTPayload {
        var iss: IssuerClaim
        var aud: AudienceClaim
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        var jti: IDClaim
        var appId: String
        var environment: String
        var riskStatus: String
        var stepUp: Bool
        var trust: String

        func verify(using _: some JWTAlgorithm) async throws {
            try exp.verifyNotExpired()
            guard iss.value == "attestkit", aud.value.contains("attestkit") else {
                throw JWTError.claimVerificationFailure(failedClaim: iss, reason: "issuer or audience")
            }
        }
    }

    static func configuration(
        key: TokenSigningKey = TokenSigningKey(privateKey: P256.Signing.PrivateKey()), previous: [TokenKey] = [],
        issuer: String = "attestkit", audience: String = "attestkit"
    ) throws -> TokenService.Configuration {
        try TokenService.Configuration(signingKey: key, previousKeys: previous, issuer: issuer, audience: audience)
    }

    /// A bench, a registered device, an accepted assertion and a token for it.
    static func issued(
        configuration: TokenService.Configuration? = nil, clock: Clock = Clock()
    ) async throws -> (FlowBench, FlowBench.Device, TokenService, TokenService.Issued) {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let (assertion, binding) = try device.assertion(freshness: .timestamp(milliseconds: FlowBench.milliseconds()))
        let accepted = try await bench.gate.verify(keyID: device.keyID, assertion: assertion, binding: binding)
        let service = TokenService(
            configuration: try configuration ?? Self.configuration(), store: bench.store, now: clock.closure)
        return (bench, device, service, try service.issue(for: accepted))
    }

    static func jwks(_ service: TokenService) throws -> String {
        String(decoding: try JSONEncoder().encode(service.keySet), as: UTF8.self)
    }

    @Test("a token verifies with jwt-kit against the JWKS, with the key's claims")
    func independentVerification() async throws {
        let (_, device, service, issued) = try await Self.issued()
        let keys = try await JWTKeyCollection().add(jwksJSON: try Self.jwks(service))
        let claims = try await keys.verify(issued.token, as: CheckedClaims.self)
        let expectedSubject = Data(device.keyID.bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        #expect(claims.sub.value == expectedSubject)
        #expect(claims.appId == FlowBench.appID.description)
        #expect(claims.environment == "development")
        #expect(claims.riskStatus == "unknown")
        #expect(claims.stepUp == false)
        #expect(claims.trust == "app_attest")
        #expect(claims.exp.value.timeIntervalSince(claims.iat.value) == 900)
        // The header names the key by its RFC 7638 thumbprint, which jwt-kit computed the same way.
        let header = try #require(issued.token.split(separator: ".").first)
        let headerJSON = try #require(Self.base64URL(header))
        #expect(
            String(decoding: headerJSON, as: UTF8.self)
                == #"{"alg":"ES256","kid":"\#(service.configuration.signingKey.kid)","typ":"JWT"}"#)
        #expect(try service.verify(issued.token) == issued.claims)
        // Two tokens never share a jti.
        let second = try service.issue(
            for: try #require(try await device.acceptedAgain(service, FlowBench.milliseconds())))
        #expect(second.claims.jti != issued.claims.jti)
    }

    @Test("a token bought with an assertion whose validation category changed (step-up policy) carries stepUp")
    func categoryChangeStepsUp() async throws {
        let bench = try FlowBench()
        let device = try await bench.registeredDevice()
        let service = TokenService(configuration: try Self.configuration(), store: bench.store)
        let record = try #require(try await bench.store.key(device.keyID))
        let changed = AcceptedAssertion(
            key: record, counter: 1, validationCategory: 2, validationCategoryChanged: true)
        let unchanged = AcceptedAssertion(key: record, counter: 1, validationCategory: 2)
        #expect(try service.issue(for: changed).claims.stepUp == true)
        #expect(try service.issue(for: unchanged).claims.stepUp == false)
        // The signed token says so too, read by an independent JWT library.
        let keys = try await JWTKeyCollection().add(jwksJSON: try Self.jwks(service))
        #expect(try await keys.verify(try service.issue(for: changed).token, as: CheckedClaims.self).stepUp == true)
    }

    @Test("the kid is the RFC 7638 thumbprint of the key's JWK, from a public or a private PEM")
    func thumbprint() throws {
        // For P-256 the required members are crv, kty, x and y, in that order (RFC 7638 §3.2).
        let key = P256.Signing.PrivateKey().publicKey
        let point = Array(key.x963Representation)
        let x = Self.encode(point[1..<33])
        let y = Self.encode(point[33..<65])
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#
        #expect(TokenKey(publicKey: key).kid == Self.encode(SHA256.hash(data: Array(canonical.utf8))))
        #expect(try TokenKey(pem: key.pemRepresentation).kid == TokenKey(publicKey: key).kid)
    }

    @Test("every truncation and every changed character of a token is refused, never accepted or crashed")
    func tampering() async throws {
        let (_, _, service, issued) = try await Self.issued()
        let token = Array(issued.token.utf8)
        for length in 0..<token.count {
            #expect(throws: FlowError.self) { try service.verify(String(decoding: token[..<length], as: UTF8.self)) }
        }
        let alphabet = Array("AQgw-_.=a9".utf8)
        for index in token.indices {
            for replacement in alphabet where replacement != token[index] {
                var changed = token
                changed[index] = replacement
                let text = String(decoding: changed, as: UTF8.self)
                // Also where only unused bits of the last character change: one token has exactly one text.
                let error = #expect(throws: FlowError.self, "accepted a change at \(index)") {
                    try service.verify(text)
                }
                #expect(error?.code == .tokenInvalid)
            }
        }
    }

    @Test("alg none, HS256, an unknown kid, a foreign key or another issuer or audience: token_invalid")
    func forgeries() async throws {
        let (_, _, service, issued) = try await Self.issued()
        let parts = issued.token.split(separator: ".").map(String.init)
        let kid = service.configuration.signingKey.kid
        func header(_ json: String) -> String { Self.encode(Array(json.utf8)) }
        let forged = [
            header(#"{"alg":"none","kid":"\#(kid)","typ":"JWT"}"#) + "." + parts[1] + ".",
            header(#"{"alg":"none","kid":"\#(kid)","typ":"JWT"}"#) + "." + parts[1] + "." + parts[2],
            header(#"{"alg":"HS256","kid":"\#(kid)","typ":"JWT"}"#) + "." + parts[1] + "." + parts[2],
            header(#"{"alg":"ES256","kid":"other","typ":"JWT"}"#) + "." + parts[1] + "." + parts[2],
            header(#"{"alg":"ES256","kid":"\#(kid)","typ":"JOSE+JSON"}"#) + "." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "." + parts[2] + ".",
            parts[0] + ".." + parts[2],
            "",
            String(repeating: "a", count: TokenService.maximumTokenLength + 1),
        ]
        for token in forged {
            let error = #expect(throws: FlowError.self) { try service.verify(token) }
            #expect(error?.code == .tokenInvalid, "\(token.prefix(60))")
            #expect(error?.kind == .unauthenticated)
        }
        // The same claims signed by a key the service does not hold, under the service's own kid.
        let impostor = TokenService(
            configuration: try Self.configuration(key: TokenSigningKey(privateKey: P256.Signing.PrivateKey())),
            store: MemoryAttestationStore())
        let (_, _, _, foreign) = try await Self.issued(configuration: impostor.configuration)
        let foreignParts = foreign.token.split(separator: ".").map(String.init)
        let spliced = parts[0] + "." + foreignParts[1] + "." + foreignParts[2]
        #expect(throws: FlowError.self) { try service.verify(spliced) }
        #expect(throws: FlowError.self) { try service.verify(foreign.token) }
        // Same key, another issuer or audience.
        for (issuer, audience) in [("other", "attestkit"), ("attestkit", "other")] {
            let other = TokenService(
                configuration: try Self.configuration(
                    key: service.configuration.signingKey, issuer: issuer, audience: audience),
                store: MemoryAttestationStore())
            let error = #expect(throws: FlowError.self) { try other.verify(issued.token) }
            #expect(error?.code == .tokenInvalid)
        }
    }

    @Test("expired at exp, never before; issued in the future beyond the leeway is refused")
    func times() async throws {
        let clock = Clock()
        let (bench, _, service, issued) = try await Self.issued(clock: clock)
        clock.advance(899)
        #expect(try service.verify(issued.token) == issued.claims)
        clock.advance(1)
        #expect(throws: FlowError.tokenExpired) { try service.verify(issued.token) }
        let error = await #expect(throws: FlowError.self) { try await service.consume(issued.token) }
        #expect(error?.code == .tokenExpired)
        // A verifier whose clock is behind the issuer's by more than the leeway.
        let behind = TokenService(
            configuration: service.configuration, store: bench.store, leeway: 60,
            now: { clock.now.addingTimeInterval(-900 - 61) })
        #expect(throws: FlowError.self) { try behind.verify(issued.token) }
    }

    @Test("rotation: a token of the previous key verifies while that key is listed, and the JWKS lists both")
    func rotation() async throws {
        let (bench, _, old, issued) = try await Self.issued()
        let rotated = TokenService(
            configuration: try Self.configuration(previous: [old.configuration.signingKey.key]), store: bench.store)
        #expect(try rotated.verify(issued.token) == issued.claims)
        #expect(
            rotated.keySet.keys.map(\.kid) == [rotated.configuration.signingKey.kid, old.configuration.signingKey.kid])
        let keys = try await JWTKeyCollection().add(jwksJSON: try Self.jwks(rotated))
        _ = try await keys.verify(issued.token, as: CheckedClaims.self)
        let dropped = TokenService(configuration: try Self.configuration(), store: bench.store)
        #expect(throws: FlowError.self) { try dropped.verify(issued.token) }
    }

    @Test("a limited-use token is consumed once, also by many at once")
    func consumeOnce() async throws {
        let (_, _, service, issued) = try await Self.issued()
        let winners = try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<32 {
                group.addTask {
                    do {
                        _ = try await service.consume(issued.token)
                        return true
                    } catch let error as FlowError where error == .tokenConsumed {
                        return false
                    }
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(winners == 1)
        let error = await #expect(throws: FlowError.self) { try await service.consume(issued.token) }
        #expect(error?.code == .tokenConsumed)
        #expect(error?.kind == .conflict)
    }

    @Test("a token outlives no revocation: consuming it is refused once its key is revoked")
    func revoked() async throws {
        let (bench, device, service, issued) = try await Self.issued()
        _ = try await bench.store.revokeKey(device.keyID, now: Date())
        let error = await #expect(throws: FlowError.self) { try await service.consume(issued.token) }
        #expect(error?.code.rawValue == "key_revoked")
    }

    @Test("lifetimes outside 5 minutes to 7 days and empty names are refused", arguments: [299, 604_801, 0, -1])
    func lifetimeBounds(seconds: Int) throws {
        let key = TokenSigningKey(privateKey: P256.Signing.PrivateKey())
        #expect(throws: FlowError.self) {
            try TokenService.Configuration(signingKey: key, lifetime: .seconds(seconds))
        }
        #expect(throws: FlowError.self) { try TokenService.Configuration(signingKey: key, issuer: "") }
        #expect(throws: FlowError.self) { try TokenService.Configuration(signingKey: key, audience: "") }
        #expect(throws: FlowError.self) { try TokenSigningKey(pem: "not a key") }
        #expect(throws: FlowError.self) { try TokenSigningKey(pem: key.key.publicKey.pemRepresentation) }
    }

    /// Revocation reaches tokens: a revoked key's token still verifies offline (jwt-kit, the JWKS) until `exp`, but
    /// ``TokenService/introspect(_:)`` answers inactive; a live token introspects with its claims and is still
    /// consumable afterwards, then inactive once consumed; expired and garbage tokens are inactive.
    @Test("introspection: live active without consuming; consumed, revoked, expired and garbage inactive")
    func introspection() async throws {
        let clock = Clock()
        let (bench, device, service, issued) = try await Self.issued(clock: clock)
        #expect(try await service.introspect(issued.token) == TokenIntrospectionResponse(claims: issued.claims))
        #expect(try await service.introspect(issued.token) == TokenIntrospectionResponse(claims: issued.claims))
        #expect(try await service.consume(issued.token) == issued.claims)
        #expect(try await service.introspect(issued.token) == .inactive)
        for garbage in ["", "a.b.c", String(issued.token.dropLast(2)) + "AA", String(repeating: "e", count: 5_000)] {
            #expect(try await service.introspect(garbage) == .inactive)
        }
        var generator = SystemRandomNumberGenerator()
        let record = try #require(try await bench.store.key(device.keyID))
        let second = try service.issue(for: record, using: &generator)
        _ = try await bench.store.revokeKey(device.keyID, now: clock.now)
        let keys = try await JWTKeyCollection().add(jwksJSON: try Self.jwks(service))
        _ = try await keys.verify(second.token, as: CheckedClaims.self)
        #expect(try service.verify(second.token) == second.claims)
        #expect(try await service.introspect(second.token) == .inactive)

        let other = try await bench.registeredDevice()
        let live = try service.issue(for: try #require(try await bench.store.key(other.keyID)), using: &generator)
        #expect(try await service.introspect(live.token).active)
        clock.advance(900)
        #expect(try await service.introspect(live.token) == .inactive)
    }

    @Test("challenge cleanup deletes a consumed token's record once no replica's clock can take it for unexpired")
    func cleanup() async throws {
        let clock = Clock()
        let (bench, _, service, issued) = try await Self.issued(clock: clock)
        _ = try await service.consume(issued.token)
        #expect(try await bench.store.deleteExpiredTokens(now: clock.now) == 0)
        // The replica that cleans up is past the expiry; this one, 30 s behind, still takes the token for unexpired
        // and must find it consumed: the record is kept for the clock leeway (60 s) after the expiry.
        #expect(try await bench.store.deleteExpiredTokens(now: issued.expiresAt.addingTimeInterval(1)) == 0)
        clock.advance(issued.expiresAt.timeIntervalSince(clock.now) - 29)
        await #expect(throws: FlowError.tokenConsumed) { try await service.consume(issued.token) }
        #expect(try await bench.store.deleteExpiredTokens(now: issued.expiresAt.addingTimeInterval(60)) == 1)
        // Once deleted the token is expired anyway: consumption stays refused.
        clock.advance(3_600)
        await #expect(throws: FlowError.tokenExpired) { try await service.consume(issued.token) }
    }

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func base64URL(_ text: Substring) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}

extension FlowBench.Device {
    /// Another accepted assertion of this device on `service`'s store.
    func acceptedAgain(_ service: TokenService, _ milliseconds: Int64) async throws -> AcceptedAssertion? {
        let gate = AssertionGate(store: service.store)
        let (assertion, binding) = try assertion(freshness: .timestamp(milliseconds: milliseconds))
        return try await gate.verify(keyID: keyID, assertion: assertion, binding: binding)
    }
}
