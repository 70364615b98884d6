public import AttestKit
public import AttestKitApple
public import Foundation

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension ServerConfiguration.Apple {
    /// The token provider of the configured `.p8` key, shared by both services.
    /// - Parameter now: The clock of the tokens' `iat`.
    /// - Throws: `AppleServiceError` when the key is not a P-256 private key.
    public func tokenProvider(
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(AppleServiceError) -> AppleTokenProvider {
        try AppleTokenProvider(privateKeyPEM: privateKeyPEM, keyID: keyID, teamID: teamID, now: now)
    }

    /// The deadline of one call to Apple, retries included: ``timeout``.
    public var transport: TransportConfiguration {
        TransportConfiguration(timeout: .milliseconds(Int(timeout * 1_000)))
    }

    /// DeviceCheck at ``deviceCheckBaseURL``, or Apple's host for ``deviceCheckEnvironment``.
    public var deviceCheckConfiguration: DeviceCheckClient.Configuration {
        deviceCheckBaseURL.map { DeviceCheckClient.Configuration(baseURL: $0, transport: transport) }
            ?? DeviceCheckClient.Configuration(environment: deviceCheckEnvironment, transport: transport)
    }

    /// The receipt exchange of `environment`: ``receiptExchangeURL``, or Apple's endpoint for that environment.
    ///
    /// - Parameters:
    ///   - environment: The environment of the receipts to exchange.
    ///   - receiptAnchor: The root the new receipts must chain to.
    ///   - leeway: The clock skew allowed to the new receipts' creation time; at least 300 seconds.
    public func receiptExchangeConfiguration(
        environment: AppAttestEnvironment, receiptAnchor: TrustAnchor, leeway: TimeInterval
    ) -> ReceiptExchangeClient.Configuration {
        receiptExchangeURL.map {
            ReceiptExchangeClient.Configuration(
                url: $0, environment: environment, transport: transport, receiptAnchor: receiptAnchor,
                leeway: max(leeway, 300))
        }
            ?? ReceiptExchangeClient.Configuration(
                environment: environment, transport: transport, receiptAnchor: receiptAnchor,
                leeway: max(leeway, 300))
    }
}
