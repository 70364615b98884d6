package import JWTKit

/// The claims of an Apple provider token, exactly as Apple's services read them: `iss` is the Team ID and `iat`
/// the issue time in whole seconds since 1970 (an integer, not a fraction).
package struct ProviderTokenClaims: JWTPayload, Equatable {
    /// The Apple Developer Team ID.
    package var iss: String
    /// When the token was signed, in whole seconds since 1970.
    package var iat: Int

    /// Creates the claims.
    package init(iss: String, iat: Int) {
        self.iss = iss
        self.iat = iat
    }

    /// Nothing to check here: Apple judges the age of `iat`, and so does the mock.
    package func verify(using algorithm: some JWTAlgorithm) async throws {}
}
