import AsyncHTTPClient
import AttestKit
import AttestKitApple
import AttestKitFlows
import Foundation

extension AppleClients {
    /// Apple's web services for the service, from its Apple key (`apple.*`): DeviceCheck and the receipt exchange
    /// per environment, sharing one token provider.
    init(
        _ configuration: ServerConfiguration.Apple, receiptAnchor: TrustAnchor, leeway: TimeInterval,
        httpClient: HTTPClient, now: @escaping @Sendable () -> Date
    ) throws(AppleServiceError) {
        let tokens = try configuration.tokenProvider(now: now)
        var exchange: [AppAttestEnvironment: ReceiptExchangeClient] = [:]
        for environment in AppAttestEnvironment.allCases {
            exchange[environment] = try ReceiptExchangeClient(
                configuration: configuration.receiptExchangeConfiguration(
                    environment: environment, receiptAnchor: receiptAnchor, leeway: leeway),
                tokens: tokens, httpClient: httpClient, now: now)
        }
        self.init(
            deviceCheck: DeviceCheckClient(
                configuration: configuration.deviceCheckConfiguration, tokens: tokens, httpClient: httpClient, now: now),
            deviceCheckEnvironment: configuration.deviceCheckEnvironment, receiptExchange: exchange)
    }
}
