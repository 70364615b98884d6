/// The request headers of an assertion-protected request, as the service's middleware reads them.
///
/// The four App Attest names are the service's contract (`AttestKitHeaders` of AttestKitServer, copied here so
/// that an app never links server code); ``deviceToken`` is for the DeviceCheck fallback, which the app's own
/// server reads and forwards to `POST /v1/devicecheck/validate`.
public enum AttestKitHeaderNames: Sendable {
    /// `X-AttestKit-Key-Id`: the key identifier, Base64.
    public static let keyID = "X-AttestKit-Key-Id"
    /// `X-AttestKit-Assertion`: the assertion object, Base64.
    public static let assertion = "X-AttestKit-Assertion"
    /// `X-AttestKit-Challenge`: the challenge id the client data names.
    public static let challenge = "X-AttestKit-Challenge"
    /// `X-AttestKit-Timestamp`: the Unix milliseconds the client data names.
    public static let timestamp = "X-AttestKit-Timestamp"
    /// `X-AttestKit-Device-Token`: a DeviceCheck token, Base64 (the DeviceCheck fallback; not read by the
    /// service's middleware).
    public static let deviceToken = "X-AttestKit-Device-Token"
}
