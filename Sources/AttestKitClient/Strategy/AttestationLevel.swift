/// How strongly a request proved that it comes from the genuine app, from strongest to weakest.
///
/// ``AttestKitHTTPClient`` tries the levels of its ``AttestationStrategy`` in order for every request and uses
/// the first that can serve it: App Attest where the device can assert, a DeviceCheck token where it cannot, and
/// then the levels without a device proof the app allows. The app sees the level of every answer
/// (``SecureResponse/level``, ``AttestationStrategy/onLevelChange``) and its server, which reads the same proof
/// from the headers, applies matching limits.
public enum AttestationLevel: String, Sendable, Hashable, CaseIterable, Codable, Comparable {
    /// App Attest: an attested Secure Enclave key signed an assertion bound to the request (strongest).
    case appAttest
    /// DeviceCheck: a token that Apple vouches was made by a genuine device running the app
    /// (`X-AttestKit-Device-Token`). The server checks it with the AttestKit middleware, or passes the request to
    /// `POST /v1/requests/verify`: both validate it with Apple and use it up. Never `POST /v1/devicecheck/validate`
    /// alone, which uses nothing up and so accepts a replayed token.
    case deviceCheck
    /// No device proof: the server judges the request on its own risk signals (account age, velocity, IP
    /// reputation, ...); ``AttestationStrategy/additionalVerification`` may add the app's own proof.
    case riskBased
    /// No device proof and no risk signals the app vouches for: only low-value features, with tight limits.
    case degraded

    /// Stronger levels sort first: `appAttest < deviceCheck < riskBased < degraded`.
    public static func < (lhs: AttestationLevel, rhs: AttestationLevel) -> Bool {
        rank(lhs) < rank(rhs)
    }

    private static func rank(_ level: AttestationLevel) -> Int {
        switch level {
        case .appAttest: 0
        case .deviceCheck: 1
        case .riskBased: 2
        case .degraded: 3
        }
    }
}
