public import Foundation
import JWTKit

/// Signs the ES256 provider tokens that authorize calls to DeviceCheck and the App Attest receipt exchange, and
/// reuses each one until it is ``renewalAge`` old.
///
/// A token is built like an APNs provider token (docs/apple-formats.md §5, §6): header
/// `{"alg":"ES256","kid":KEY_ID,"typ":"JWT"}`, claims `{"iss":TEAM_ID,"iat":SECONDS}`, signed with the `.p8` key of a
/// key that has DeviceCheck enabled; the signature is the raw 64-byte r‖s JWS form. Apple rejects tokens older than an
/// hour ("Authorization Token Expired"), so the default renews after 50 minutes. One provider serves both services and
/// any number of concurrent calls.
///
/// ```swift
/// let tokens = try AppleTokenProvider(
///     privateKeyPEM: String(contentsOfFile: "AuthKey_ABC123DEFG.p8", encoding: .utf8),
///     keyID: "ABC123DEFG", teamID: "TEAM123456")
/// ```
///
/// Neither the key nor the tokens ever appear in a description, a log or an error.
public actor AppleTokenProvider {
    /// The key identifier (10 characters), the header's `kid`.
    public nonisolated let keyID: String
    /// The Team ID, the `iss` claim.
    public nonisolated let teamID: String
    /// A cached token is renewed once it is this many seconds old.
    public nonisolated let renewalAge: TimeInterval

    private let privateKey: ES256PrivateKey
    private let now: @Sendable () -> Date
    private var keys: JWTKeyCollection?
    private var cached: (token: String, issuedAt: Int)?
    /// The signing under way, which concurrent callers share: one token per renewal, however many calls wait.
    private var signing: Task<Result<String, AppleServiceError>, Never>?

    /// The default age at which a token is renewed: 50 minutes, well within Apple's hour.
    public static let defaultRenewalAge: TimeInterval = 50 * 60
    /// The longest renewal age: 55 minutes, five short of Apple's hour, so that a token used at the end of its life
    /// is not refused as expired by an Apple whose clock runs a few minutes ahead of this server's (a token renewed
    /// at 60 minutes would be, for its last seconds, by any clock ahead at all).
    public static let maximumRenewalAge: TimeInterval = 55 * 60

    /// Creates a provider for a `.p8` key.
    ///
    /// - Parameters:
    ///   - privateKeyPEM: The contents of `AuthKey_KEYID.p8`: a PKCS#8 PEM P-256 private key.
    ///   - keyID: The key identifier Apple shows for the key (letters and digits).
    ///   - teamID: The Apple Developer Team ID (letters and digits).
    ///   - renewalAge: The age in seconds at which a token is replaced; between 1 s and 55 minutes
    ///     (``maximumRenewalAge``).
    ///   - now: The clock that dates tokens; inject one in tests.
    /// - Throws: ``AppleServiceError/Code/privateKeyInvalid`` for a key that is not a P-256 PEM private key,
    ///   ``AppleServiceError/Code/invalidConfiguration`` for a malformed key id, team id or renewal age.
    public init(
        privateKeyPEM: String,
        keyID: String,
        teamID: String,
        renewalAge: TimeInterval = AppleTokenProvider.defaultRenewalAge,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(AppleServiceError) {
        guard Self.isIdentifier(keyID) else {
            throw AppleServiceError(.invalidConfiguration, "the key id is 1 to 64 letters and digits")
        }
        guard Self.isIdentifier(teamID) else {
            throw AppleServiceError(.invalidConfiguration, "the team id is 1 to 64 letters and digits")
        }
        guard renewalAge >= 1, renewalAge <= Self.maximumRenewalAge else {
            throw AppleServiceError(.invalidConfiguration, "the renewal age is between 1 s and 55 minutes")
        }
        do {
            self.privateKey = try ES256PrivateKey(pem: privateKeyPEM)
        } catch {
            throw AppleServiceError(.privateKeyInvalid, "the key is not a PEM P-256 private key (.p8)")
        }
        self.keyID = keyID
        self.teamID = teamID
        self.renewalAge = renewalAge
        self.now = now
    }

    /// A valid token: the cached one while it is younger than ``renewalAge``, else a newly signed one (one for all
    /// the calls that ask while it is being signed).
    ///
    /// - Throws: ``AppleServiceError/Code/tokenSigningFailed`` if signing fails.
    public func token() async throws(AppleServiceError) -> String {
        let seconds = Int(now().timeIntervalSince1970.rounded(.down))
        if let cached, seconds >= cached.issuedAt, Double(seconds - cached.issuedAt) < renewalAge {
            return cached.token
        }
        if let signing { return try await signing.value.get() }
        // The task runs on this actor only once this call suspends, so it always finds itself in `signing`.
        let task = Task { await self.sign(at: seconds) }
        signing = task
        return try await task.value.get()
    }

    /// Signs a token issued at `seconds`, caches it and ends the signing under way, in one step on the actor: a
    /// caller arriving after it (an ``invalidate(_:)`` between, say) finds the new token or none, never a finished
    /// signing whose token was dropped since.
    private func sign(at seconds: Int) async -> Result<String, AppleServiceError> {
        let keys = await signingKeys()
        defer { signing = nil }
        do {
            let token = try await keys.sign(
                ProviderTokenClaims(iss: teamID, iat: seconds), kid: JWKIdentifier(string: keyID))
            cached = (token, seconds)
            return .success(token)
        } catch {
            return .failure(AppleServiceError(.tokenSigningFailed, "the provider token could not be signed"))
        }
    }

    /// When the cached token was issued, or `nil` when none is cached.
    public var issuedAt: Date? {
        cached.map { Date(timeIntervalSince1970: TimeInterval($0.issuedAt)) }
    }

    /// Drops the cached token, so the next call signs a new one: after Apple answered 401.
    public func invalidate() {
        cached = nil
    }

    /// Drops the cached token if it is `token`, the one Apple answered 401 to: a token signed since (another call's
    /// renewal), which Apple has not refused, is kept for the calls that share it.
    public func invalidate(_ token: String) {
        if cached?.token == token { cached = nil }
    }

    /// The key collection that signs, built on first use (adding a key to it is asynchronous).
    private func signingKeys() async -> JWTKeyCollection {
        if let keys { return keys }
        let collection = JWTKeyCollection()
        await collection.add(ecdsa: privateKey, kid: JWKIdentifier(string: keyID))
        keys = collection
        return collection
    }

    /// 1 to 64 ASCII letters and digits.
    private static func isIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }
    }
}

extension AppleTokenProvider: CustomStringConvertible {
    /// The key id and team id; never the key or a token.
    public nonisolated var description: String {
        "AppleTokenProvider(keyID: \(keyID), teamID: \(teamID))"
    }
}
