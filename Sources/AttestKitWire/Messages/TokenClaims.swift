/// The claims of an AttestKit session token (a JWT signed with ES256), as any backend decodes them after checking
/// the signature against the service's JWKS (`GET /.well-known/jwks.json`), and as `POST /v1/tokens/consume`
/// answers them.
///
/// The registered claims keep their JWT names (RFC 7519); AttestKit's own claims use the API's camelCase names.
public struct TokenClaims: Codable, Sendable, Hashable {
    /// `iss`: the issuing service (`tokens.issuer`).
    public var iss: String
    /// `aud`: who the token is for (`tokens.audience`).
    public var aud: String
    /// `sub`: the App Attest key identifier that proved itself, base64url without padding; for a token bought with
    /// a debug token (``trust`` `debug`), `debug:` and a fingerprint of that debug token instead; for one bought with a
    /// DeviceCheck token (``trust`` `devicecheck`), `devicecheck:` and a fingerprint of that device token.
    public var sub: String
    /// `iat`: issued at, Unix seconds.
    public var iat: Int64
    /// `exp`: expires at, Unix seconds.
    public var exp: Int64
    /// `jti`: the token's unique identifier (16 random bytes, base64url): what consumption records.
    public var jti: String
    /// The App ID (`TEAMID.bundle.id`) the key is registered for.
    public var appId: String
    /// `production` or `development`.
    public var environment: String
    /// Apple's risk metric for the key, when its receipt was traded.
    public var riskMetric: Int?
    /// `unknown` until Apple rated the key, then `assessed`.
    public var riskStatus: String
    /// Whether the deployment's risk policy asks for more verification of this key.
    public var stepUp: Bool
    /// What proved the app when the token was issued: `app_attest` (an App Attest assertion), `devicecheck` (a
    /// DeviceCheck token Apple validated, where the deployment sells tokens for them: a real device, not this
    /// app's key) or `debug` (a debug token of a Simulator or CI build, only ever accepted by a deployment that
    /// allows no production keys). A backend that needs App Attest's proof accepts `app_attest` only.
    public var trust: String

    /// Creates claims.
    public init(
        iss: String, aud: String, sub: String, iat: Int64, exp: Int64, jti: String, appId: String,
        environment: String, riskMetric: Int?, riskStatus: String, stepUp: Bool, trust: String
    ) {
        self.iss = iss
        self.aud = aud
        self.sub = sub
        self.iat = iat
        self.exp = exp
        self.jti = jti
        self.appId = appId
        self.environment = environment
        self.riskMetric = riskMetric
        self.riskStatus = riskStatus
        self.stepUp = stepUp
        self.trust = trust
    }
}
