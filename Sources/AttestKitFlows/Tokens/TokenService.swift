public import AttestKit
public import AttestKitStore
public import AttestKitWire
import Crypto
public import Foundation

/// Issues, verifies and consumes AttestKit session tokens: short-lived JWTs (ES256) that say "this key proved,
/// with an assertion, that it lives in a genuine instance of the app", so that any backend can trust a request
/// by checking a signature against the service's JWKS instead of calling the service.
///
/// A token is issued only after the ``AssertionGate`` accepted an assertion over the very request that asks for
/// it, so the assertion is the proof and cannot be replayed; or, in a deployment without production keys, for a
/// debug token of its allow-list (``issue(debugToken:appIDs:)``), at trust `debug`. Its claims are
/// `TokenClaims`, whose `trust` says which. A
/// limited-use token is consumed once (``consume(_:)``): the store records its `jti` with one atomic statement, so
/// of concurrent consumers, across replicas sharing PostgreSQL, exactly one gets the claims.
///
/// A token verified offline (a backend with the JWKS) is trusted until its `exp`, whatever happens to its key after
/// issuance: offline verification outlives revocation by up to the token's lifetime, which is why the default
/// lifetime is short (15 minutes). A backend that must see revocations at once asks the service instead:
/// ``introspect(_:)`` (RFC 7662, `POST /v1/tokens/introspect`) answers inactive for a revoked key's token (or one
/// whose key no longer stands otherwise, ``keyStanding``), and ``consume(_:)`` refuses it.
///
/// Verification is strict: three base64url parts, a header with `alg` `ES256` and the `kid` of one of the
/// configured keys (the current one or a previous one kept for rotation), a 64-byte signature, then the issuer,
/// the audience and the expiry.
public struct TokenService: Sendable {
    /// What tokens look like.
    public struct Configuration: Sendable {
        /// The key that signs new tokens.
        public var signingKey: TokenSigningKey
        /// Earlier signing keys (their public halves), still accepted and published, so that tokens signed before a
        /// rotation stay valid until they expire.
        public var previousKeys: [TokenKey]
        /// `iss`.
        public var issuer: String
        /// `aud`.
        public var audience: String
        /// How long a token lives, 5 minutes to 7 days; 15 minutes by default. Offline verification (the JWKS)
        /// trusts a token of a revoked key until it expires, so keep it short.
        public var lifetime: Duration

        /// The default lifetime: 15 minutes, the longest a revoked key's token stays verifiable offline.
        public static let defaultLifetime: Duration = .seconds(900)

        /// The shortest lifetime: 5 minutes.
        public static let minimumLifetime: Duration = .seconds(300)
        /// The longest lifetime: 7 days.
        public static let maximumLifetime: Duration = .seconds(604_800)

        /// Creates a configuration.
        /// - Throws: `invalid_field` (not configured) for a lifetime outside 5 minutes to 7 days or an empty
        ///   issuer or audience.
        public init(
            signingKey: TokenSigningKey, previousKeys: [TokenKey] = [], issuer: String = "attestkit",
            audience: String = "attestkit", lifetime: Duration = defaultLifetime
        ) throws(FlowError) {
            guard lifetime >= Self.minimumLifetime, lifetime <= Self.maximumLifetime else {
                throw FlowError(.invalidField, .notConfigured, "tokens.ttl: between 300 s and 604800 s (7 days)")
            }
            guard !issuer.isEmpty, !audience.isEmpty else {
                throw FlowError(.invalidField, .notConfigured, "tokens.issuer and tokens.audience must not be empty")
            }
            self.signingKey = signingKey
            self.previousKeys = previousKeys
            self.issuer = issuer
            self.audience = audience
            self.lifetime = lifetime
        }
    }

    /// A token just issued.
    public struct Issued: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
        /// The compact JWS.
        public let token: String
        /// Its claims.
        public let claims: TokenClaims
        /// When it expires (`exp`).
        public var expiresAt: Date { Date(timeIntervalSince1970: TimeInterval(claims.exp)) }
        /// When it expires; never the token.
        public var description: String { "Issued(expiresAt: \(expiresAt))" }
        /// No children: ``token`` is a bearer credential.
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
    }

    /// The longest token accepted, in bytes: AttestKit's are about 600.
    public static let maximumTokenLength = 4_096

    /// The configuration.
    public let configuration: Configuration
    /// Where consumed tokens are recorded.
    public let store: any AttestationStore
    /// How `stepUp` is decided.
    public let riskPolicy: RiskPolicy
    /// How far in the future `iat` may be (clocks of replicas differ a little), in seconds.
    public let leeway: TimeInterval
    /// The debug tokens that buy a token at trust `debug` (none by default); a token bought with one is honoured
    /// only while that debug token stays on the list.
    public let debugTokens: DebugTokens
    /// The DeviceCheck tokens that buy a token at trust `devicecheck`
    /// (``issue(deviceToken:client:appIDs:environment:validated:)``), or `nil` (the default) to refuse them; a token
    /// bought with one is honoured only while they are accepted.
    public let deviceTokens: DeviceTokenValidator?
    /// What a key must still be for its tokens to count: active, and with the configuration's `apps`,
    /// `environments` and `keys.expire-after`, as its next assertion would be.
    public let keyStanding: KeyStanding
    private let now: @Sendable () -> Date

    /// Creates the service.
    public init(
        configuration: Configuration, store: any AttestationStore, riskPolicy: RiskPolicy = RiskPolicy(),
        debugTokens: DebugTokens = .none, deviceTokens: DeviceTokenValidator? = nil, leeway: TimeInterval = 60,
        keyStanding: KeyStanding = KeyStanding(), now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.store = store
        self.riskPolicy = riskPolicy
        self.debugTokens = debugTokens
        self.deviceTokens = deviceTokens
        self.leeway = leeway
        self.keyStanding = keyStanding
        self.now = now
    }

    /// The public keys that verify tokens: the current signing key, then the previous ones.
    public var keySet: JSONWebKeySet {
        JSONWebKeySet(keys: ([configuration.signingKey.key] + configuration.previousKeys).map(\.jwk))
    }

    /// Issues a token for a key whose assertion the gate just accepted: its `stepUp` is set by the key's risk, or by
    /// a change of validation category the gate marked for step-up (``AcceptedAssertion/validationCategoryChanged``).
    public func issue(for accepted: AcceptedAssertion) throws(FlowError) -> Issued {
        var generator = SystemRandomNumberGenerator()
        let key = accepted.key
        return try sign(
            subject: Base64URL.encode(key.keyID.bytes), appID: key.appID, environment: key.environment,
            riskMetric: key.riskMetric, trust: .appAttest, stepUp: accepted.validationCategoryChanged,
            using: &generator)
    }

    /// Issues a token for `key` with `jti` drawn from `generator`.
    public func issue(for key: KeyRecord, using generator: inout some RandomNumberGenerator) throws(FlowError)
        -> Issued
    {
        try sign(
            subject: Base64URL.encode(key.keyID.bytes), appID: key.appID, environment: key.environment,
            riskMetric: key.riskMetric, trust: .appAttest, using: &generator)
    }

    /// Issues a token at trust `debug` for a request that presents `debugToken`, one of ``debugTokens``, instead of
    /// an assertion (a Simulator or CI build). Its `sub` is the debug token's fingerprint
    /// (``DebugTokens/fingerprint(of:)``), its environment `development` (debug tokens exist only where production
    /// keys are refused), its risk unknown.
    ///
    /// - Parameters:
    ///   - debugToken: The debug token the request presented.
    ///   - appIDs: The deployment's apps: the token names the one app, so there must be exactly one.
    /// - Throws: 401 `debug_token_invalid` for a token not on the list (or any token when there is none);
    ///   503 `debug_token_app_ambiguous` (not configured) when the deployment has no app or several.
    public func issue(debugToken: String, appIDs: [AppID]) throws(FlowError) -> Issued {
        var generator = SystemRandomNumberGenerator()
        return try issue(debugToken: debugToken, appIDs: appIDs, using: &generator)
    }

    /// ``issue(debugToken:appIDs:)`` with `jti` drawn from `generator`.
    public func issue(
        debugToken: String, appIDs: [AppID], using generator: inout some RandomNumberGenerator
    ) throws(FlowError) -> Issued {
        let fingerprint = try debugTokens.fingerprint(of: debugToken)
        guard appIDs.count == 1, let appID = appIDs.first else {
            throw FlowError(
                .debugTokenAppAmbiguous, .notConfigured,
                "a token bought with a debug token names the app: the deployment needs exactly one app in apps")
        }
        return try sign(
            subject: fingerprint, appID: appID, environment: .development, riskMetric: nil, trust: .debug,
            using: &generator)
    }

    /// Issues a token at trust `devicecheck` for a request that presents `deviceToken` (a device without App Attest)
    /// instead of an assertion: Apple validates the token and it is used up
    /// (``DeviceTokenValidator/redeem(_:client:store:validated:)``), so it buys one session token, once across
    /// replicas, and proves no request after. Its `sub` is `devicecheck:` and the base64url of the first 16 bytes of
    /// the device token's SHA-256 (it names no key), its risk unknown, so it steps up while the deployment has a risk
    /// policy.
    ///
    /// - Parameters:
    ///   - deviceToken: The DeviceCheck token the request presented (Base64).
    ///   - client: Who sent it (an address), for the per-client budget of validations.
    ///   - appIDs: The deployment's apps: the token names the one app, so there must be exactly one.
    ///   - environment: The environment of the deployment's DeviceCheck (Apple's development or production server).
    ///   - validated: Told the validation's answer (valid or not, from the cache or from Apple), for metrics.
    /// - Throws: 403 `devicecheck_not_configured` when the service takes no device tokens; 400 `invalid_field`;
    ///   503 `device_token_app_ambiguous` with no app or several; the validator's 403 `device_token_invalid`,
    ///   409 `device_token_used`, 429 `rate_limited` and Apple's failures.
    public func issue(
        deviceToken: String, client: String?, appIDs: [AppID], environment: AppAttestEnvironment,
        validated: (_ valid: Bool, _ cached: Bool) -> Void = { _, _ in }
    ) async throws(FlowError) -> Issued {
        guard let deviceTokens else {
            throw FlowError(.deviceCheckNotConfigured, .refused, "this service issues no tokens for DeviceCheck tokens")
        }
        _ = try Field.bytes(deviceToken, AttestKitHeaderNames.deviceToken, maximum: 8_192)
        guard appIDs.count == 1, let appID = appIDs.first else {
            throw FlowError(
                .deviceTokenAppAmbiguous, .notConfigured,
                "a token bought with a DeviceCheck token names the app: the deployment needs exactly one app in apps")
        }
        try await deviceTokens.redeem(deviceToken, client: client, store: store, validated: validated)
        let digest = SHA256.hash(data: Array(deviceToken.utf8))
        var generator = SystemRandomNumberGenerator()
        return try sign(
            subject: Self.deviceCheckSubjectPrefix + Base64URL.encode(Array(digest.prefix(16))), appID: appID,
            environment: environment, riskMetric: nil, trust: .deviceCheck, using: &generator)
    }

    /// The prefix of the `sub` of a token bought with a DeviceCheck token.
    static let deviceCheckSubjectPrefix = "devicecheck:"

    /// Signs the claims of a new token.
    private func sign(
        subject: String, appID: AppID, environment: AppAttestEnvironment, riskMetric: Int?, trust: TrustLevel,
        stepUp: Bool = false, using generator: inout some RandomNumberGenerator
    ) throws(FlowError) -> Issued {
        let issuedAt = Int64(now().timeIntervalSince1970.rounded(.down))
        let jti = Base64URL.encode((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let claims = TokenClaims(
            iss: configuration.issuer, aud: configuration.audience, sub: subject,
            iat: issuedAt, exp: issuedAt + configuration.lifetime.components.seconds, jti: jti,
            appId: appID.description, environment: environment.rawValue, riskMetric: riskMetric,
            riskStatus: RiskPolicy.status(riskMetric),
            stepUp: stepUp || riskPolicy.requiresStepUp(trust: trust, metric: riskMetric), trust: trust.rawValue)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let payload: Data
        do {
            payload = try encoder.encode(claims)
        } catch {
            throw FlowError(.internalError, .internalFailure, "the token claims could not be encoded")
        }
        let signingKey = configuration.signingKey
        let header = #"{"alg":"ES256","kid":"\#(signingKey.kid)","typ":"JWT"}"#
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(payload)
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try signingKey.privateKey.signature(for: Array(input.utf8))
        } catch {
            throw FlowError(.internalError, .internalFailure, "the token could not be signed")
        }
        return Issued(token: input + "." + Base64URL.encode(signature.rawRepresentation), claims: claims)
    }

    /// Verifies a token's form, signature, issuer, audience, trust and expiry, and returns its claims. A token at
    /// trust `debug` verifies only while the debug token it was bought with is one of ``debugTokens``; one at trust
    /// `devicecheck` only while the service takes DeviceCheck tokens (``deviceTokens``).
    /// - Throws: 401 `token_invalid` (with the reason) or `token_expired`.
    public func verify(_ token: String) throws(FlowError) -> TokenClaims {
        guard token.utf8.count <= Self.maximumTokenLength else { throw .tokenInvalid("longer than any token") }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .tokenInvalid("not a compact JWS of three parts") }
        guard let headerBytes = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(
                Header.self, from: Data(headerBytes))
        else { throw .tokenInvalid("the header is not base64url JSON") }
        guard header.alg == "ES256" else { throw .tokenInvalid("the algorithm must be ES256") }
        guard header.typ == nil || header.typ == "JWT" else { throw .tokenInvalid("the type must be JWT") }
        let keys = [configuration.signingKey.key] + configuration.previousKeys
        guard let key = keys.first(where: { $0.kid == header.kid }) else {
            throw .tokenInvalid("signed by a key this service does not hold")
        }
        guard let signatureBytes = Base64URL.decode(parts[2]), signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
            key.publicKey.isValidSignature(signature, for: Array(signingInput(of: token, parts)))
        else { throw .tokenInvalid("the signature does not verify") }
        guard let payload = Base64URL.decode(parts[1]),
            let claims = try? JSONDecoder().decode(TokenClaims.self, from: Data(payload))
        else { throw .tokenInvalid("the claims are not base64url JSON of an AttestKit token") }
        guard claims.iss == configuration.issuer, claims.aud == configuration.audience else {
            throw .tokenInvalid("issued by another service or for another audience")
        }
        switch TrustLevel(rawValue: claims.trust) {
        case .appAttest: break
        case .debug:
            guard debugTokens.holds(fingerprint: claims.sub) else {
                throw .tokenInvalid("bought with a debug token this service no longer accepts")
            }
        case .deviceCheck:
            guard deviceTokens != nil, claims.sub.hasPrefix(Self.deviceCheckSubjectPrefix) else {
                throw .tokenInvalid("bought with a DeviceCheck token, which this service no longer accepts")
            }
        case nil: throw .tokenInvalid("a trust level no token is issued at")
        }
        let time = now().timeIntervalSince1970
        guard TimeInterval(claims.iat) <= time + leeway, claims.exp > claims.iat,
            claims.exp - claims.iat <= Configuration.maximumLifetime.components.seconds
        else { throw .tokenInvalid("its times are impossible") }
        guard TimeInterval(claims.exp) > time else { throw .tokenExpired }
        return claims
    }

    /// Verifies a limited-use token and consumes it: the claims the first time, `token_consumed` after.
    ///
    /// The key the token names must still stand (``keyStanding``): consumption refuses the token of a revoked key,
    /// of a key whose App ID or environment the configuration no longer accepts, of one unused for longer than
    /// `keys.expire-after` (as the key's next assertion would be refused), a token bought without a key (trust
    /// `debug` or `devicecheck`) for an App ID no longer accepted, and a token at trust `debug` after the
    /// withdrawal of its debug token (``verify(_:)``).
    /// - Throws: 401 `token_invalid`/`token_expired`, 409 `token_consumed`, 403
    ///   `key_revoked`/`app_not_accepted`/`environment_not_accepted`/`key_expired`/`key_not_found`, 503 when storage
    ///   cannot answer.
    public func consume(_ token: String) async throws(FlowError) -> TokenClaims {
        let claims = try verify(token)
        if let keyID = try Self.keyID(of: claims) {
            let record: KeyRecord?
            do throws(StoreError) {
                record = try await store.key(keyID)
            } catch {
                throw FlowError(error)
            }
            guard let record else { throw FlowError(StoreError.keyNotFound) }
            try keyStanding.require(record, at: now())
        } else {
            try keyStanding.requireApp(claims.appId)
        }
        let first: Bool
        do throws(StoreError) {
            // Kept past `exp` by the clock leeway: a replica whose clock is behind the one that cleans up still
            // takes the token for unexpired a little longer, and must still find it consumed.
            first = try await store.consumeToken(
                claims.jti, expiresAt: Date(timeIntervalSince1970: TimeInterval(claims.exp) + leeway), now: now())
        } catch {
            throw FlowError(error)
        }
        guard first else { throw .tokenConsumed }
        return claims
    }

    /// Introspects a session token for a backend (RFC 7662), without consuming it: its claims when it verifies
    /// (``verify(_:)``), at trust `app_attest` the key it names is still registered and stands (``keyStanding``:
    /// active, accepted, not unused for too long), at another trust its App ID is still accepted, and it was not
    /// consumed (``consume(_:)``); otherwise `TokenIntrospectionResponse.inactive`
    /// and nothing else.
    ///
    /// A consumed token is inactive at once, on every replica sharing the store. Introspection is not a one-time
    /// check itself: of a backend that introspects and another that consumes at the same moment, both may see the
    /// token usable; ``consume(_:)`` is the one that decides once.
    /// - Throws: 503 `storage_unavailable` when the store cannot answer (never a guess of "active").
    public func introspect(_ token: String) async throws(FlowError) -> TokenIntrospectionResponse {
        guard let claims = try? verify(token) else { return .inactive }
        let keyID: KeyID?
        do throws(FlowError) {
            keyID = try Self.keyID(of: claims)
        } catch {
            return .inactive
        }
        if let keyID {
            let record: KeyRecord?
            do throws(StoreError) {
                record = try await store.key(keyID)
            } catch {
                throw FlowError(error)
            }
            guard let record, keyStanding.holds(record, at: now()) else {
                return .inactive
            }
        } else if (try? keyStanding.requireApp(claims.appId)) == nil {
            return .inactive
        }
        do throws(StoreError) {
            if try await store.isTokenConsumed(claims.jti) { return .inactive }
        } catch  where error.code == .invalidInput {
            // A jti the store cannot hold (no token issued here has one) can never be consumed: fail closed.
            return .inactive
        } catch {
            throw FlowError(error)
        }
        return TokenIntrospectionResponse(claims: claims)
    }

    /// The key a token at trust `app_attest` names (`sub`), or `nil` for one at trust `debug`.
    private static func keyID(of claims: TokenClaims) throws(FlowError) -> KeyID? {
        guard claims.trust == TrustLevel.appAttest.rawValue else { return nil }
        guard let keyBytes = Base64URL.decode(Substring(claims.sub)), let id = try? KeyID(bytes: keyBytes) else {
            throw .tokenInvalid("the subject is not a key identifier")
        }
        return id
    }

    /// The bytes a token's signature covers: `header.payload` as sent.
    private func signingInput(of token: String, _ parts: [Substring]) -> Substring.UTF8View {
        token[parts[0].startIndex..<parts[1].endIndex].utf8
    }

    /// The members of a token header AttestKit reads.
    private struct Header: Decodable {
        var alg: String
        var kid: String
        var typ: String?
    }
}
