public import Foundation
#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// Which ``AttestationLevel``s an app accepts, in order, and how it follows them.
///
/// The fallback happens at run time, request by request, and never blocks the user: when App Attest cannot serve a
/// request (the device does not support it, `featureUnsupported` where `isSupported` said yes, as in some app
/// extensions, Apple's service unavailable and backing off, or the service's ramp deferring this install's
/// attestation: ``AttestKitClientError/Code/attestationDeferred``), the request goes out with a DeviceCheck token;
/// when that fails too, at the first level without a device proof the app allows. A failed level is skipped for a
/// backoff period (App Attest: the ``AppAttestManager``'s persisted backoff or the service's deferral; DeviceCheck:
/// ``deviceCheckBackoff``), then tried again.
///
/// Refusals by the server are not fallbacks: a request that the server refused is reported, never re-sent with
/// a weaker proof.
public struct AttestationStrategy: Sendable {
    /// The levels tried for every request, strongest first. ``AttestationLevel/degraded`` should come last.
    public var levels: [AttestationLevel]
    /// How long DeviceCheck is skipped after it failed to make a token.
    public var deviceCheckBackoff: TimeInterval
    /// Called before a request goes out at ``AttestationLevel/riskBased`` or ``AttestationLevel/degraded``: the
    /// hook for the app's own additional verification (a CAPTCHA token, a risk signal, a header naming the level).
    /// It returns the request to send; an error it throws is passed on to the caller.
    public var additionalVerification: (@Sendable (URLRequest, AttestationLevel) async throws -> URLRequest)?
    /// Called when the level a request was served at differs from the previous request's: for the app's UI and
    /// metrics. Not called for the first request at ``AttestationLevel/appAttest``.
    public var onLevelChange: (@Sendable (AttestationLevel) -> Void)?

    /// The write-ups' strategy: App Attest, then DeviceCheck, then risk-based, then degraded.
    public static let standard = AttestationStrategy()

    /// App Attest only: a request that App Attest cannot serve fails with ``AttestKitClientError/Code/unavailable``
    /// (or ``AttestKitClientError/Code/attestationDeferred`` while the service defers the attestation).
    public static let appAttestOnly = AttestationStrategy(levels: [.appAttest])

    /// Creates a strategy.
    /// - Parameters:
    ///   - levels: The levels tried, strongest first; duplicates are dropped.
    ///   - deviceCheckBackoff: How long DeviceCheck is skipped after a failure (5 minutes by default).
    ///   - additionalVerification: The hook for requests without a device proof.
    ///   - onLevelChange: The observer of level changes.
    public init(
        levels: [AttestationLevel] = AttestationLevel.allCases,
        deviceCheckBackoff: TimeInterval = 300,
        additionalVerification: (@Sendable (URLRequest, AttestationLevel) async throws -> URLRequest)? = nil,
        onLevelChange: (@Sendable (AttestationLevel) -> Void)? = nil
    ) {
        var unique: [AttestationLevel] = []
        for level in levels where !unique.contains(level) { unique.append(level) }
        self.levels = unique
        self.deviceCheckBackoff = max(0, deviceCheckBackoff)
        self.additionalVerification = additionalVerification
        self.onLevelChange = onLevelChange
    }
}
