public import AttestKit
public import AttestKitFlows
public import AttestKitStore
public import Logging

/// The flows of one Vapor application, configured once on `app.attestKit`: the store they share, the
/// assertion gate, the challenge issuer, the attestation registrar and the deployment's policy.
///
/// ```swift
/// let store = SQLiteAttestationStore(path: "attestkit.sqlite")
/// app.attestKit = AttestKitServices(store: store, verifier: AttestationVerifier(appIDs: [appID]))
/// app.lifecycle.use(AttestKitLifecycle())
/// ```
public struct AttestKitServices: Sendable {
    /// The state every flow shares.
    public let store: any AttestationStore
    /// Verifies assertions (``AttestKitMiddleware``).
    public let gate: AssertionGate
    /// Issues challenges (`POST challenges`).
    public let issuer: ChallengeIssuer
    /// Registers keys (`POST attestations`).
    public let registrar: AttestationRegistrar
    /// Registers keys with a bound app key (`POST key-attestations`).
    public let keyAttestation: KeyAttestation
    /// The deployment's rules beyond Apple's checks.
    public let policy: DeploymentPolicy
    /// The largest body the middleware hashes and a route decodes, in bytes.
    public let bodyLimit: Int
    /// The debug tokens ``AttestKitMiddleware`` accepts at the lowest trust level (none by default; refused by
    /// `DebugTokens` while production keys are allowed).
    public var debugTokens: DebugTokens = .none
    /// The DeviceCheck fallback of ``AttestKitMiddleware``, or `nil` to refuse device tokens.
    public var deviceTokens: DeviceTokenValidator?
    /// Where the middleware counts its outcomes (the process-wide swift-metrics factory by default).
    public var metrics = FlowMetrics()

    /// Creates the flows over `store`: `verifier` is the deployment's apps (`nil`: every attestation is refused
    /// with `apps_not_configured`), `policy` its rules (its `attestationPolicy` is checked by the verifier after the
    /// verifier's own policy, its `riskPolicy` by the middleware), `recorder` (opt-in) writes a bundle for every failed
    /// verification, for `attestkit replay`, `appKeyAuthority` is the CA that certifies the app keys of key
    /// attestations (`nil`: no certificates).
    public init(
        store: any AttestationStore, verifier: AttestationVerifier?, policy: DeploymentPolicy = DeploymentPolicy(),
        challengeTTL: Duration = .seconds(300), timestampWindow: Double = 300, bodyLimit: Int = 65_536,
        recorder: VerificationRecorder? = nil, appKeyAuthority: AppKeyAuthority? = nil
    ) {
        self.store = store
        self.gate = AssertionGate(store: store, timestampWindow: timestampWindow, recorder: recorder)
        self.issuer = ChallengeIssuer(store: store, ttl: challengeTTL)
        // The deployment's rules join the verifier's own policy, checked after it, in the verifier's call.
        self.registrar = AttestationRegistrar(
            verifier: verifier?.appending(policy.attestationPolicy), store: store, recorder: recorder)
        self.keyAttestation = KeyAttestation(registrar: registrar, authority: appKeyAuthority)
        self.policy = policy
        self.bodyLimit = bodyLimit
    }

    /// The guard of a route group under `policy`, with these flows' gate, fallbacks, risk policy and metrics.
    public func routeGuard(_ policy: EnforcementPolicy, logger: Logger) -> RouteGuard {
        RouteGuard(
            gate: gate, policy: policy, debugTokens: debugTokens, deviceTokens: deviceTokens,
            riskPolicy: self.policy.riskPolicy, metrics: metrics, logger: logger)
    }
}
