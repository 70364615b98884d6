public import AttestKit
public import AttestKitApple

/// Apple's web services the application calls: DeviceCheck (its routes, the DeviceCheck fallback of guarded routes
/// and of session tokens) and the receipt exchange of each environment (the receipt refresh). The edge builds them
/// from Apple's key (the service from `apple.*`); without them DeviceCheck answers 503 `apple_not_configured` and
/// receipts are not refreshed.
public struct AppleClients: Sendable {
    /// DeviceCheck's client.
    public let deviceCheck: DeviceCheckClient
    /// The environment DeviceCheck answers for (Apple's production or development host): the environment of the
    /// session tokens a DeviceCheck token buys.
    public let deviceCheckEnvironment: AppAttestEnvironment
    /// The receipt exchange of each environment; empty: receipts are not refreshed.
    public let receiptExchange: [AppAttestEnvironment: ReceiptExchangeClient]

    /// Apple's clients.
    public init(
        deviceCheck: DeviceCheckClient, deviceCheckEnvironment: AppAttestEnvironment = .production,
        receiptExchange: [AppAttestEnvironment: ReceiptExchangeClient] = [:]
    ) {
        self.deviceCheck = deviceCheck
        self.deviceCheckEnvironment = deviceCheckEnvironment
        self.receiptExchange = receiptExchange
    }
}
