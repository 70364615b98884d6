import AsyncHTTPClient
import AttestKit
import AttestKitApple
import Foundation

/// Apple's web services for the server: DeviceCheck and the receipt exchange per environment, sharing one token
/// provider. Exists only when an Apple key is configured.
struct AppleServices: Sendable {
    let deviceCheck: DeviceCheckClient
    let receiptExchange: [AppAttestEnvironment: ReceiptExchangeClient]

    init(
        _ configuration: ServerConfiguration.Apple, receiptAnchor: TrustAnchor, leeway: TimeInterval,
        httpClient: HTTPClient, now: @escaping @Sendable () -> Date
    ) throws(AppleServiceError) {
        let tokens = try configuration.tokenProvider(now: now)
        self.deviceCheck = DeviceCheckClient(
            configuration: configuration.deviceCheckConfiguration, tokens: tokens, httpClient: httpClient, now: now)
        var exchange: [AppAttestEnvironment: ReceiptExchangeClient] = [:]
        for environment in AppAttestEnvironment.allCases {
            exchange[environment] = try ReceiptExchangeClient(
                configuration: configuration.receiptExchangeConfiguration(
                    environment: environment, receiptAnchor: receiptAnchor, leeway: leeway),
                tokens: tokens, httpClient: httpClient, now: now)
        }
        self.receiptExchange = exchange
    }
}
