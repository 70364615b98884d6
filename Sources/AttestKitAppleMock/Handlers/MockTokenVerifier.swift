import AttestKit
import AttestKitApple
import Foundation
import JWTKit

/// Checks provider tokens as Apple does: compact ES256 JWS (another algorithm is malformed), a `kid` and an `iss`
/// (the configured ones when configured, any otherwise), the configured key, and an `iat` no older than the
/// lifetime.
struct MockTokenVerifier: Sendable {
    /// The verdict on a token.
    enum Verdict: Sendable, Hashable {
        /// Valid; the claims.
        case valid(teamID: String)
        /// Not a compact ES256 JWS.
        case malformed
        /// Signature, key id, team id or issue time wrong or missing.
        case unverifiable
        /// Older than the lifetime.
        case expired
    }

    let publicKey: ES256PublicKey
    let keyID: String?
    let teamID: String?
    let lifetime: TimeInterval

    /// Judges `token` at `now`.
    func verify(_ token: String, at now: Date) async -> Verdict {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy(Self.isBase64URL) }) else {
            return .malformed
        }
        struct Header: Decodable {
            var alg: String?
            var kid: String?
        }
        guard let headerBytes = Base64.decode(parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes))
        else { return .malformed }
        // Apple takes only ES256 (anything else is a malformed token, 400) and finds the key by `kid`: a token
        // without one cannot be verified, whatever key the mock was given.
        guard header.alg == "ES256" else { return .malformed }
        guard let kid = header.kid, !kid.isEmpty, keyID == nil || kid == keyID else { return .unverifiable }
        let keys = JWTKeyCollection()
        await keys.add(ecdsa: publicKey)
        guard let claims = try? await keys.verify(token, as: ProviderTokenClaims.self) else { return .unverifiable }
        guard !claims.iss.isEmpty, teamID == nil || claims.iss == teamID else { return .unverifiable }
        let age = now.timeIntervalSince1970 - TimeInterval(claims.iat)
        if age > lifetime { return .expired }
        if age < -60 { return .unverifiable }
        return .valid(teamID: claims.iss)
    }

    private static func isBase64URL(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == "_")
    }
}
