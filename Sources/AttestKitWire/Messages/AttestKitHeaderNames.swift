/// The request headers of an assertion-protected request: the names every middleware reads and every client sends.
///
/// The four App Attest headers carry an assertion bound to the request (``RequestBinding``): the key, the
/// assertion, and exactly one of the challenge id and the timestamp the client data names. A request without them
/// may carry ``deviceToken`` (the DeviceCheck fallback of devices without App Attest) or ``debugToken`` (Simulator
/// and CI builds) instead, at a lower trust level.
public enum AttestKitHeaderNames: Sendable {
    /// `X-AttestKit-Key-Id`: the key identifier, Base64.
    public static let keyID = "X-AttestKit-Key-Id"
    /// `X-AttestKit-Assertion`: the assertion object, Base64.
    public static let assertion = "X-AttestKit-Assertion"
    /// `X-AttestKit-Challenge`: the challenge id the client data names.
    public static let challenge = "X-AttestKit-Challenge"
    /// `X-AttestKit-Timestamp`: the Unix milliseconds the client data names.
    public static let timestamp = "X-AttestKit-Timestamp"
    /// `X-AttestKit-Device-Token`: a DeviceCheck token, Base64 (the DeviceCheck fallback): the AttestKit
    /// middlewares validate it with Apple and use it up (a second request with it is refused); an app's own server
    /// in another language passes the request to `POST /v1/requests/verify`, which does the same.
    /// (`POST /v1/devicecheck/validate` only asks Apple whether a token is genuine: it uses nothing up, so a server
    /// that accepted requests on its answer would accept a replayed token.)
    public static let deviceToken = "X-AttestKit-Device-Token"
    /// `X-AttestKit-Debug-Token`: a debug token of the deployment's allow-list (Simulator and CI builds), accepted
    /// by the middlewares and `POST /v1/tokens` only where production keys are not allowed.
    public static let debugToken = "X-AttestKit-Debug-Token"

    /// The freshness headers of `freshness`: its name and value (`nil` for ``Freshness/vouchedByCaller``, which
    /// no header carries).
    public static func header(of freshness: Freshness) -> (name: String, value: String)? {
        switch freshness {
        case .challenge(let id): (challenge, id)
        case .timestamp(let milliseconds): (timestamp, String(milliseconds))
        case .vouchedByCaller: nil
        }
    }
}
