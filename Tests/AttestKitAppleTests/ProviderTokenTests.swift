import AttestKitApple
import Crypto
import Foundation
import JWTKit
import Testing

/// Provider tokens: APNs-style ES256 JWS (docs/apple-formats.md §5, §6) that an independent verifier accepts, reused
/// for 50 minutes and renewed after, by an injected clock.
@Suite struct ProviderTokenTests {
    struct Header: Decodable, Equatable {
        var alg: String
        var kid: String
        var typ: String?
    }

    struct Claims: Decodable, Equatable {
        var iss: String
        var iat: Int
    }

    /// The three segments of a compact JWS, decoded.
    static func segments(_ token: String) throws -> (header: [UInt8], claims: [UInt8], signature: [UInt8]) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        try #require(parts.count == 3)
        for part in parts {
            #expect(!part.contains("=") && !part.contains("+") && !part.contains("/"), "base64url without padding")
        }
        return (try decode(parts[0]), try decode(parts[1]), try decode(parts[2]))
    }

    static func decode(_ base64url: String) throws -> [UInt8] {
        var text = base64url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return Array(try #require(Data(base64Encoded: text)))
    }

    @Test func tokenIsAnES256JWSWithKidIssAndIntegerIat() async throws {
        let tokens = try AppleFixture.tokens(TestTime())
        let token = try await tokens.token()
        let (header, claims, signature) = try Self.segments(token)
        #expect(
            try JSONDecoder().decode(Header.self, from: Data(header))
                == Header(alg: "ES256", kid: "ABC123DEFG", typ: "JWT"))
        #expect(
            try JSONDecoder().decode(Claims.self, from: Data(claims)) == Claims(iss: "ABCDE12345", iat: 1_776_000_000))
        // Whole seconds, and nothing but iss and iat.
        let claimsText = String(decoding: claims, as: UTF8.self)
        #expect(claimsText.contains("\"iat\":1776000000") && !claimsText.contains("1776000000."))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(claims)) as? [String: Any])
        #expect(Set(object.keys) == ["iss", "iat"])
        // JWS ES256 is raw r‖s (64 bytes), not DER.
        #expect(signature.count == 64)
    }

    @Test func jwtKitVerifiesTheTokenWithThePublicKeyOnly() async throws {
        let token = try await AppleFixture.tokens(TestTime()).token()
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(pem: AppleFixture.publicKeyPEM), kid: "ABC123DEFG")
        let claims = try await keys.verify(token, as: ProviderTokenClaims.self)
        #expect(claims == ProviderTokenClaims(iss: "ABCDE12345", iat: 1_776_000_000))

        let stranger = JWTKeyCollection()
        await stranger.add(ecdsa: try ES256PublicKey(pem: P256.Signing.PrivateKey().publicKey.pemRepresentation))
        await #expect(throws: (any Error).self) { _ = try await stranger.verify(token, as: ProviderTokenClaims.self) }
    }

    @Test func swiftCryptoVerifiesTheRawSignatureOverTheSigningInput() async throws {
        let token = try await AppleFixture.tokens(TestTime()).token()
        let (_, _, signature) = try Self.segments(token)
        let signingInput = token.split(separator: ".").prefix(2).joined(separator: ".")
        let parsed = try P256.Signing.ECDSASignature(rawRepresentation: signature)
        #expect(AppleFixture.signingKey.publicKey.isValidSignature(parsed, for: Data(signingInput.utf8)))
        #expect(!AppleFixture.signingKey.publicKey.isValidSignature(parsed, for: Data((signingInput + "x").utf8)))
    }

    @Test func tokenIsReusedForFiftyMinutesThenRenewed() async throws {
        let clock = TestTime()
        let tokens = try AppleFixture.tokens(clock)
        let first = try await tokens.token()
        #expect(await tokens.issuedAt == AppleFixture.time)
        clock.advance(by: 49 * 60 + 59)
        #expect(try await tokens.token() == first)
        clock.advance(by: 1)
        let renewed = try await tokens.token()
        #expect(renewed != first)
        #expect(try JSONDecoder().decode(Claims.self, from: Data(Self.segments(renewed).claims)).iat == 1_776_003_000)
        clock.advance(by: 10 * 60)
        #expect(try await tokens.token() == renewed)
    }

    @Test func aShorterRenewalAgeAndAClockGoingBackRenew() async throws {
        let clock = TestTime()
        let tokens = try AppleTokenProvider(
            privateKeyPEM: AppleFixture.privateKeyPEM, keyID: "ABC123DEFG", teamID: "ABCDE12345", renewalAge: 60,
            now: clock.closure)
        let first = try await tokens.token()
        clock.advance(by: 59)
        #expect(try await tokens.token() == first)
        clock.advance(by: 1)
        let second = try await tokens.token()
        #expect(second != first)
        clock.advance(by: -5)
        #expect(try await tokens.token() != second)
    }

    @Test func invalidateDropsTheCachedToken() async throws {
        let tokens = try AppleFixture.tokens(TestTime())
        let first = try await tokens.token()
        await tokens.invalidate()
        #expect(await tokens.issuedAt == nil)
        #expect(try await tokens.token() != first)
    }

    /// A 401 to a call drops the token that call sent, not one another call's renewal signed since.
    @Test func invalidatingARefusedTokenKeepsANewerOne() async throws {
        let tokens = try AppleFixture.tokens(TestTime())
        let refused = try await tokens.token()
        await tokens.invalidate()
        let renewed = try await tokens.token()
        await tokens.invalidate(refused)
        #expect(try await tokens.token() == renewed, "the renewed token is kept")
        await tokens.invalidate(renewed)
        #expect(await tokens.issuedAt == nil)
        #expect(try await tokens.token() != renewed)
    }

    /// Callers that ask at once while no token is cached share one signing: one token, not one per caller.
    @Test func concurrentCallersAllGetAValidToken() async throws {
        let tokens = try AppleFixture.tokens(TestTime())
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: try ES256PublicKey(pem: AppleFixture.publicKeyPEM))
        let all = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<16 { group.addTask { try await tokens.token() } }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(all.count == 16)
        #expect(Set(all).count == 1, "one signing shared by every caller")
        for token in Set(all) { _ = try await keys.verify(token, as: ProviderTokenClaims.self) }
    }

    @Test(arguments: [
        "", "not a key",
        "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    ])
    func unusableKeysAreRejected(_ pem: String) {
        #expect(throws: AppleServiceError.code(.privateKeyInvalid)) {
            try AppleTokenProvider(privateKeyPEM: pem, keyID: "ABC123DEFG", teamID: "ABCDE12345")
        }
    }

    @Test func aPublicKeyOrAnotherCurveIsNotAPrivateKey() {
        for pem in [AppleFixture.publicKeyPEM, P384.Signing.PrivateKey().pemRepresentation] {
            #expect(throws: AppleServiceError.code(.privateKeyInvalid)) {
                try AppleTokenProvider(privateKeyPEM: pem, keyID: "ABC123DEFG", teamID: "ABCDE12345")
            }
        }
    }

    @Test(arguments: [("", "ABCDE12345"), ("ABC-123", "ABCDE12345"), ("ABC123DEFG", ""), ("ABC123DEFG", "TEAM\"1")])
    func malformedIdentifiersAreRejected(keyID: String, teamID: String) {
        #expect(throws: AppleServiceError.code(.invalidConfiguration)) {
            try AppleTokenProvider(privateKeyPEM: AppleFixture.privateKeyPEM, keyID: keyID, teamID: teamID)
        }
    }

    @Test func renewalAgeLeavesAMarginWithinAnHour() throws {
        _ = try AppleTokenProvider(
            privateKeyPEM: AppleFixture.privateKeyPEM, keyID: "ABC123DEFG", teamID: "ABCDE12345", renewalAge: 3_300)
        for age in [0.5, 3_301, 3_600, 3_601] {
            #expect(throws: AppleServiceError.code(.invalidConfiguration)) {
                try AppleTokenProvider(
                    privateKeyPEM: AppleFixture.privateKeyPEM, keyID: "ABC123DEFG", teamID: "ABCDE12345",
                    renewalAge: age)
            }
        }
    }

    @Test func descriptionShowsNeitherKeyNorToken() async throws {
        let tokens = try AppleFixture.tokens(TestTime())
        let token = try await tokens.token()
        let text = "\(tokens)"
        #expect(text == "AppleTokenProvider(keyID: ABC123DEFG, teamID: ABCDE12345)")
        #expect(!text.contains(token) && !text.contains("PRIVATE"))
    }
}
