import AttestKitFlows

extension ServerConfiguration {
    /// The largest token key file read.
    private static let tokenKeyFileLimit = 64 * 1_024

    /// The `tokens.*` settings, from the reader scoped to `tokens`: `nil` without `tokens.signing-key-file` (token
    /// routes answer 503 `tokens_not_configured`), otherwise the validated token configuration. The key files are
    /// read here, never through swift-configuration, and their contents are never logged.
    static func tokens(_ settings: StrictConfigReader) throws(ServerConfigurationError) -> TokenService.Configuration? {
        let previousFiles = try settings.strings("previous-key-files") ?? []
        let issuer = try settings.string("issuer")
        let audience = try settings.string("audience")
        let ttl = try settings.double("ttl")
        guard let keyFile = try settings.string("signing-key-file") else {
            let stray = [
                (settings.key("previous-key-files"), !previousFiles.isEmpty), (settings.key("issuer"), issuer != nil),
                (settings.key("audience"), audience != nil), (settings.key("ttl"), ttl != nil),
            ]
            if let (key, _) = stray.first(where: \.1) {
                throw ServerConfigurationError(key, "needs tokens.signing-key-file")
            }
            return nil
        }
        let signingKey: TokenSigningKey
        do {
            signingKey = try TokenSigningKey(
                pem: try ServerConfigurationSource.text(
                    ofFile: keyFile, key: settings.key("signing-key-file"), limit: tokenKeyFileLimit))
        } catch let error as ServerConfigurationError {
            throw error
        } catch {
            throw ServerConfigurationError(settings.key("signing-key-file"), "is not a PEM P-256 private key")
        }
        var previousKeys: [TokenKey] = []
        for file in previousFiles {
            do {
                previousKeys.append(
                    try TokenKey(
                        pem: try ServerConfigurationSource.text(
                            ofFile: file, key: settings.key("previous-key-files"), limit: tokenKeyFileLimit)))
            } catch let error as ServerConfigurationError {
                throw error
            } catch {
                throw ServerConfigurationError(
                    settings.key("previous-key-files"), "holds a file that is not a PEM P-256 key")
            }
        }
        if let ttl {
            guard ttl.isFinite, ttl >= 300, ttl <= 604_800, ttl == ttl.rounded() else {
                throw ServerConfigurationError(
                    settings.key("ttl"), "is whole seconds from 300 (5 minutes) to 604800 (7 days)")
            }
        }
        for (key, value) in [(settings.key("issuer"), issuer), (settings.key("audience"), audience)] {
            if let value, value.isEmpty || value.utf8.count > 256 {
                throw ServerConfigurationError(key, "is 1 to 256 bytes (UTF-8; ASCII characters)")
            }
        }
        do {
            return try TokenService.Configuration(
                signingKey: signingKey, previousKeys: previousKeys, issuer: issuer ?? "attestkit",
                audience: audience ?? "attestkit",
                lifetime: ttl.map { .seconds(Int64($0)) } ?? TokenService.Configuration.defaultLifetime)
        } catch {
            throw ServerConfigurationError("tokens", error.reason)
        }
    }
}
