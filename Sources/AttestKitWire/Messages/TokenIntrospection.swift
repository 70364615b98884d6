/// `POST /v1/tokens/introspect` request (backend): RFC 7662 token introspection, as JSON. Introspection never
/// consumes a token.
public struct TokenIntrospectionRequest: Codable, Sendable, Hashable {
    /// A session token as `POST /v1/tokens` issued it, or with ``tokenTypeHint`` ``appKeyCertificate`` the Base64
    /// DER of an app key certificate as `POST /v1/key-attestations` issued it.
    public var token: String
    /// What ``token`` is: ``sessionToken`` (the default when absent) or ``appKeyCertificate``.
    public var tokenTypeHint: String?

    /// The type of a session token (a JWT of `POST /v1/tokens`).
    public static let sessionToken = "session_token"
    /// The type of an app key certificate (the X.509 certificate of `POST /v1/key-attestations`).
    public static let appKeyCertificate = "app_key_certificate"

    /// Creates the request.
    public init(token: String, tokenTypeHint: String? = nil) {
        self.token = token
        self.tokenTypeHint = tokenTypeHint
    }
}

/// `POST /v1/tokens/introspect` answer (200), in the shape of RFC 7662: `{"active": false}` and nothing else for
/// anything not alive now (malformed, unknown, expired, of a revoked or unknown key, a certificate this service's CA
/// did not issue or whose key is no longer bound to it); for a live one `{"active": true, ...}` with what it says.
public struct TokenIntrospectionResponse: Codable, Sendable, Hashable {
    /// Whether the token or certificate is alive now.
    public var active: Bool
    /// `session_token` or `app_key_certificate` (active answers only).
    public var tokenType: String?
    /// A session token's `iss`.
    public var iss: String?
    /// A session token's `aud`.
    public var aud: String?
    /// The App Attest key id, base64url without padding (a session token's `sub`, a certificate's `CN`); for a
    /// session token at trust `debug`, `debug:` and a fingerprint of its debug token.
    public var sub: String?
    /// A session token's `iat`, Unix seconds.
    public var iat: Int64?
    /// A certificate's notBefore, Unix seconds.
    public var nbf: Int64?
    /// When it expires: a session token's `exp`, a certificate's notAfter, Unix seconds.
    public var exp: Int64?
    /// A session token's `jti`.
    public var jti: String?
    /// The App ID the key is registered for.
    public var appId: String?
    /// `production` or `development`.
    public var environment: String?
    /// A session token's risk metric, when it carries one.
    public var riskMetric: Int?
    /// A session token's `riskStatus`.
    public var riskStatus: String?
    /// A session token's `stepUp`.
    public var stepUp: Bool?
    /// A session token's `trust`.
    public var trust: String?
    /// A certificate's app key: its RFC 7638 JWK thumbprint.
    public var appKeyThumbprint: String?

    /// `{"active": false}`.
    public static let inactive = TokenIntrospectionResponse(active: false)

    /// An answer with only `active` set.
    public init(active: Bool) {
        self.active = active
    }

    /// The active answer for a live session token: its claims.
    public init(claims: TokenClaims) {
        self.active = true
        self.tokenType = TokenIntrospectionRequest.sessionToken
        self.iss = claims.iss
        self.aud = claims.aud
        self.sub = claims.sub
        self.iat = claims.iat
        self.exp = claims.exp
        self.jti = claims.jti
        self.appId = claims.appId
        self.environment = claims.environment
        self.riskMetric = claims.riskMetric
        self.riskStatus = claims.riskStatus
        self.stepUp = claims.stepUp
        self.trust = claims.trust
    }

    /// The active answer for a live app key certificate.
    /// - Parameters:
    ///   - keyID: The App Attest key id, base64url without padding.
    ///   - appID: The App ID it is registered for.
    ///   - environment: `production` or `development`.
    ///   - notBefore: The certificate's notBefore, Unix seconds.
    ///   - notAfter: The certificate's notAfter, Unix seconds.
    ///   - appKeyThumbprint: The app key's RFC 7638 thumbprint.
    public init(
        certificateOf keyID: String, appID: String, environment: String, notBefore: Int64, notAfter: Int64,
        appKeyThumbprint: String
    ) {
        self.active = true
        self.tokenType = TokenIntrospectionRequest.appKeyCertificate
        self.sub = keyID
        self.appId = appID
        self.environment = environment
        self.nbf = notBefore
        self.exp = notAfter
        self.appKeyThumbprint = appKeyThumbprint
    }
}

extension TokenIntrospectionRequest: CustomStringConvertible, CustomReflectable {
    /// Never the token: printing or logging the message shows no secret.
    public var description: String { "TokenIntrospectionRequest(tokenTypeHint: \(tokenTypeHint ?? "none"))" }

    /// No children: the token is a secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
