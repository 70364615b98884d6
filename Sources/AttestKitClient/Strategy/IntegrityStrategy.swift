/// How an app proves its integrity to its server, from strongest to weakest; see
/// ``choose(appAttest:deviceCheck:riskSignalsAvailable:)``.
///
/// Graceful degradation: App Attest is not available everywhere (the Simulator, older devices, some Macs, App
/// Clips and extensions in some versions), and an app should not lock those users out. The server learns which
/// strategy a request used from its headers and applies matching limits.
public enum IntegrityStrategy: String, Sendable, Hashable, CaseIterable {
    /// App Attest: an attested Secure Enclave key signs every protected request (strongest).
    case appAttest
    /// DeviceCheck: a token that Apple vouches was made by a genuine device running the app; the server checks
    /// it with `POST /v1/devicecheck/validate` and may keep two bits per device.
    case deviceCheck
    /// No device proof: the server judges the request on its own risk signals (account age, velocity, IP
    /// reputation, ...).
    case riskBased
    /// No proof and no risk signals: only low-value features, with tight limits.
    case limited

    /// The strongest strategy the device and the app support.
    ///
    /// App Attest if the provider is present and supported, else a DeviceCheck token if that is, else risk-based
    /// when the server has risk signals for this user, else limited.
    /// - Parameters:
    ///   - appAttest: The App Attest provider, if the app uses one.
    ///   - deviceCheck: The DeviceCheck provider, if the app uses one.
    ///   - riskSignalsAvailable: Whether the server can judge this user by other signals.
    public static func choose(
        appAttest: (any AppAttestProvider)?,
        deviceCheck: (any DeviceCheckTokenProvider)?,
        riskSignalsAvailable: Bool = true
    ) -> IntegrityStrategy {
        if let appAttest, appAttest.isSupported { return .appAttest }
        if let deviceCheck, deviceCheck.isSupported { return .deviceCheck }
        return riskSignalsAvailable ? .riskBased : .limited
    }
}
