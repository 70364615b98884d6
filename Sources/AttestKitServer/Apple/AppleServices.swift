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
        let tokens = try AppleTokenProvider(
            privateKeyPEM: configuration.privateKeyPEM, keyID: configuration.keyID, teamID: configuration.teamID,
            now: now)
        let transport = TransportConfiguration(timeout: .milliseconds(Int(configuration.timeout * 1_000)))
        let deviceCheckConfiguration =
            configuration.deviceCheckBaseURL.map { DeviceCheckClient.Configuration(baseURL: $0, transport: transport) }
            ?? DeviceCheckClient.Configuration(environment: configuration.deviceCheckEnvironment, transport: transport)
        self.deviceCheck = DeviceCheckClient(
            configuration: deviceCheckConfiguration, tokens: tokens, httpClient: httpClient, now: now)
        var exchange: [AppAttestEnvironment: ReceiptExchangeClient] = [:]
        for environment in AppAttestEnvironment.allCases {
            let receiptConfiguration =
                configuration.receiptExchangeURL.map {
                    ReceiptExchangeClient.Configuration(
                        url: $0, environment: environment, transport: transport, receiptAnchor: receiptAnchor,
                        leeway: max(leeway, 300))
                }
                ?? ReceiptExchangeClient.Configuration(
                    environment: environment, transport: transport, receiptAnchor: receiptAnchor,
                    leeway: max(leeway, 300))
            exchange[environment] = try ReceiptExchangeClient(
                configuration: receiptConfiguration, tokens: tokens, httpClient: httpClient, now: now)
        }
        self.receiptExchange = exchange
    }
}
