import AttestKitFlows

extension ServerConfiguration {
    /// The largest CA certificate or key file read.
    private static let caFileLimit = 64 * 1_024

    /// The `key-attestation.*` settings, from the reader scoped to `key-attestation`: `nil` without a CA (key
    /// attestations are answered without a certificate), otherwise the CA. The certificate and key files come
    /// together; they are read here, never through swift-configuration, and the key is never logged. A key that is
    /// not the certificate's, or a certificate that is not a CA, stops the start with the setting's name.
    static func keyAttestationAuthority(
        _ settings: StrictConfigReader
    ) throws(ServerConfigurationError) -> AppKeyAuthority? {
        let certificateFile = try settings.string("ca-certificate-file")
        let keyFile = try settings.string("ca-key-file")
        let validity = try settings.double("certificate-validity")
        guard let certificateFile, let keyFile else {
            if certificateFile != nil || keyFile != nil {
                throw ServerConfigurationError(
                    settings.key("ca-certificate-file"), "and key-attestation.ca-key-file come together")
            }
            if validity != nil {
                throw ServerConfigurationError(
                    settings.key("certificate-validity"), "needs key-attestation.ca-certificate-file")
            }
            return nil
        }
        var seconds = Int64(AppKeyAuthority.defaultValidity.components.seconds)
        if let validity {
            guard validity.isFinite, validity >= 300, validity <= 2_592_000, validity == validity.rounded() else {
                throw ServerConfigurationError(
                    settings.key("certificate-validity"), "is whole seconds from 300 (5 minutes) to 2592000 (30 days)"
                )
            }
            seconds = Int64(validity)
        }
        let certificate = try ServerConfigurationSource.text(
            ofFile: certificateFile, key: settings.key("ca-certificate-file"), limit: caFileLimit)
        let key = try ServerConfigurationSource.text(
            ofFile: keyFile, key: settings.key("ca-key-file"), limit: caFileLimit)
        do {
            return try AppKeyAuthority(certificatePEM: certificate, privateKeyPEM: key, validity: .seconds(seconds))
        } catch {
            let key =
                switch error.underlying as? AppKeyAuthority.Problem {
                case .certificate: settings.key("ca-certificate-file")
                case .validity: settings.key("certificate-validity")
                default: settings.key("ca-key-file")
                }
            throw ServerConfigurationError(key, error.reason)
        }
    }
}
