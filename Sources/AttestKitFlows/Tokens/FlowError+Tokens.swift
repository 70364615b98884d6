extension FlowError.Code {
    /// No token signing key is configured: token routes are off (`tokens_not_configured`).
    public static let tokensNotConfigured = FlowError.Code("tokens_not_configured")
    /// A configured token key that is not a P-256 PEM key (`tokens_key_invalid`).
    public static let tokensKeyInvalid = FlowError.Code("tokens_key_invalid")
    /// A token that is malformed, not signed by one of the service's keys, or not for this issuer and audience
    /// (`token_invalid`).
    public static let tokenInvalid = FlowError.Code("token_invalid")
    /// A token past its `exp` (`token_expired`).
    public static let tokenExpired = FlowError.Code("token_expired")
    /// A limited-use token that was consumed before (`token_consumed`).
    public static let tokenConsumed = FlowError.Code("token_consumed")
    /// A debug token presented for a session token where the deployment has no app or several, so the token could
    /// not name its app (`debug_token_app_ambiguous`).
    public static let debugTokenAppAmbiguous = FlowError.Code("debug_token_app_ambiguous")
    /// A DeviceCheck token presented for a session token where the deployment has no app or several
    /// (`device_token_app_ambiguous`).
    public static let deviceTokenAppAmbiguous = FlowError.Code("device_token_app_ambiguous")
}

extension FlowError {
    /// 503 `tokens_not_configured`.
    public static let tokensNotConfigured = FlowError(
        .tokensNotConfigured, .notConfigured, "no token signing key is configured (tokens.signing-key-file)")
    /// 401 `token_invalid`, with the reason.
    static func tokenInvalid(_ reason: String) -> FlowError {
        FlowError(.tokenInvalid, .unauthenticated, "the token is invalid: \(reason)")
    }
    /// 401 `token_expired`, for comparisons.
    public static let tokenExpired = FlowError(.tokenExpired, .unauthenticated, "the token has expired")
    /// 409 `token_consumed`, for comparisons.
    public static let tokenConsumed = FlowError(
        .tokenConsumed, .conflict, "the token was consumed before; a limited-use token is accepted once")
}
