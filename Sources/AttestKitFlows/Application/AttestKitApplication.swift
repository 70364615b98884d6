import AttestKit
import AttestKitApple
public import AttestKitStore
public import Foundation
public import Logging

/// The decisions composed once: what every edge (the Hummingbird service and middleware, the Vapor integration,
/// the decision route for backends in any language) serves.
///
/// Built from its ``Configuration``, a store, Apple's clients, a clock, metrics and a logger, it offers the use cases
/// over the wire messages of `AttestKitWire`: issue a challenge, register an attestation or a key attestation,
/// verify an assertion, decide about a guarded request, issue, consume and introspect session tokens, DeviceCheck,
/// key administration, readiness, and the credential of each route's audience. Each use case runs under the
/// request's storage deadline, counts its metrics, logs a storage failure once (`storage unavailable`, with the
/// store's reason, never a value) and throws a ``FlowError`` that the edge maps to its answer once.
///
/// ```swift
/// let application = try AttestKitApplication(
///     configuration: .init(appIDs: [appID], trustAnchors: try .apple()), store: store)
/// let challenge = try await application.issueChallenge(ChallengeRequest(purpose: "attest"), client: address)
/// ```
public struct AttestKitApplication: Sendable {
    /// The settings it was built from.
    public let configuration: Configuration
    /// The state every decision shares.
    public let store: any AttestationStore
    /// Apple's clients, or `nil` without Apple's key.
    public let apple: AppleClients?
    /// Where the decisions count.
    public let metrics: FlowMetrics
    /// Where storage failures and the operator's actions are logged.
    public let logger: Logger
    /// The clock decisions are taken by.
    public let now: @Sendable () -> Date
    /// Verifies assertions and advances counters.
    public let gate: AssertionGate
    /// Issues challenges.
    public let challenges: ChallengeIssuer
    /// Registers attested keys.
    public let registrar: AttestationRegistrar
    /// Registers keys with a bound app key.
    public let keyAttestation: KeyAttestation
    /// Reads and revokes keys.
    public let keys: KeyAdministration
    /// Session tokens, or `nil` without a signing key.
    public let tokens: TokenService?
    /// The debug tokens guarded routes accept.
    public let debugTokens: DebugTokens
    /// The DeviceCheck fallback, or `nil` without Apple's clients.
    public let deviceTokens: DeviceTokenValidator?
    /// This replica's name in the store's job leases: the host name, the process id and a random suffix, unique
    /// for each application (so two in one process are two holders), never a secret.
    public let replica: String
    /// The guard of each route group: `default` and the configured ones.
    let guards: [String: RouteGuard]
    /// Attestations per client address.
    let attestationsPerClient: RateLimiter
    /// Challenges per client address.
    let challengesPerClient: RateLimiter
    /// Wrong credentials per client address, shared by every credentialed route.
    let authFailuresPerClient: RateLimiter
    /// The bearer tokens of the backend and operator audiences.
    let credentials: Credentials
    /// Whether this replica drains (``startDraining()``), shared by every copy of the application.
    public let drainState = DrainState()
    /// This replica's clock against its store's (`storage.max-clock-skew`), shared by every copy of the application.
    public let clockCheck: ClockSkewCheck

    /// Composes the decisions.
    ///
    /// - Parameters:
    ///   - configuration: The settings, validated here.
    ///   - store: The store (its lifecycle is the caller's: run and prepare it as a `Service`).
    ///   - apple: Apple's clients, or `nil` without Apple's key.
    ///   - metrics: Where to count (the process-wide swift-metrics factory by default).
    ///   - logger: Where to log.
    ///   - now: The clock.
    /// - Throws: ``ConfigurationError`` naming the setting that cannot be used.
    public init(
        configuration: Configuration, store: any AttestationStore, apple: AppleClients? = nil,
        metrics: FlowMetrics = FlowMetrics(), logger: Logger = Logger(label: "attestkit"),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws(ConfigurationError) {
        try configuration.validate()
        if configuration.tokensAcceptDeviceTokens, apple == nil {
            throw ConfigurationError("tokens.device-tokens", "needs an Apple key (apple.key-file)")
        }
        self.configuration = configuration
        self.store = store
        self.apple = apple
        self.metrics = metrics
        self.logger = logger
        self.now = now
        self.replica = Self.replicaName()
        clockCheck = ClockSkewCheck(
            maximum: configuration.maxClockSkew, store: store, metrics: metrics, logger: logger, now: now)
        // The adopter's own rules, then the deployment's, run inside the verifier, right after Apple's checks.
        let verifierConfiguration = try? AttestationVerifier.Configuration(
            appIDs: configuration.appIDs, environments: configuration.environments,
            leeway: configuration.leeway, trustAnchors: configuration.trustAnchors)
        let verifier = verifierConfiguration.map { verifierConfiguration in
            guard let adopterPolicy = configuration.attestationPolicy else {
                return AttestationVerifier(
                    configuration: verifierConfiguration, policy: configuration.policy.attestationPolicy)
            }
            return AttestationVerifier(configuration: verifierConfiguration, policy: adopterPolicy)
                .appending(configuration.policy.attestationPolicy)
        }
        var recorder: VerificationRecorder?
        if let record = configuration.record {
            do throws(FlowError) {
                recorder = try VerificationRecorder(
                    directory: record.directory, maximumCount: record.maximumBundles,
                    maximumBytes: record.maximumBytes,
                    maximumPerKey: min(record.maximumBundlesPerKey, record.maximumBundles),
                    unknownMaximumCount: record.unknownMaximumBundles,
                    unknownMaximumBytes: record.unknownMaximumBytes, policy: configuration.policy, logger: logger,
                    metrics: metrics, now: now)
            } catch {
                throw ConfigurationError("record.directory", error.reason)
            }
        }
        let standing = KeyStanding(
            expiry: configuration.keyExpiry,
            acceptance: KeyAcceptance(appIDs: configuration.appIDs, environments: configuration.environments))
        let gate = AssertionGate(
            store: store, timestampWindow: configuration.timestampWindow, keyExpiry: standing.expiry,
            recorder: recorder, acceptance: standing.acceptance,
            policy: configuration.policy.assertionPolicy,
            stepsUpOnValidationCategoryChange: configuration.policy.stepsUpOnValidationCategoryChange, now: now)
        self.gate = gate
        let debugTokens: DebugTokens
        do {
            debugTokens = try DebugTokens(configuration.debugTokens, environments: configuration.environments)
        } catch {
            throw ConfigurationError("debug.tokens", error.reason)
        }
        self.debugTokens = debugTokens
        // The fallback's validations are counted as the routes' calls are (`attestkit_devicecheck_requests_total`).
        let deviceTokens = apple.map { clients in
            DeviceTokenValidator(
                capacity: configuration.deviceTokenCache.capacity, ttl: configuration.deviceTokenCache.ttl,
                validationsPerClient: configuration.deviceTokenValidationsPerClient, now: now
            ) { (token: String) async throws(AppleServiceError) in
                try await metrics.countingDeviceCheck("validate") { () async throws(AppleServiceError) in
                    try await clients.deviceCheck.validate(deviceToken: token)
                }
            }
        }
        self.deviceTokens = deviceTokens
        challenges = ChallengeIssuer(store: store, ttl: configuration.challengeTTL, now: now)
        let registrar = AttestationRegistrar(verifier: verifier, store: store, recorder: recorder)
        self.registrar = registrar
        keyAttestation = KeyAttestation(
            registrar: registrar, authority: configuration.keyAttestationAuthority, keyStanding: standing, now: now)
        keys = KeyAdministration(store: store, now: now)
        tokens = configuration.tokens.map {
            TokenService(
                configuration: $0, store: store, riskPolicy: configuration.policy.riskPolicy,
                debugTokens: debugTokens,
                deviceTokens: configuration.tokensAcceptDeviceTokens ? deviceTokens : nil,
                keyStanding: standing, now: now)
        }
        var guards: [String: RouteGuard] = [:]
        let groups = configuration.enforcementGroups.merging(["default": configuration.enforcement]) { _, new in new }
        for (name, settings) in groups {
            let policy: EnforcementPolicy
            do {
                policy = try settings.policy(group: name)
            } catch {
                throw ConfigurationError(
                    name == "default" ? "enforcement" : "enforcement.groups", "\(name): \(error.reason)")
            }
            guards[name] = RouteGuard(
                gate: gate, policy: policy, debugTokens: debugTokens, deviceTokens: deviceTokens,
                riskPolicy: configuration.policy.riskPolicy, metrics: metrics, logger: logger)
        }
        self.guards = guards
        attestationsPerClient = RateLimiter(perMinute: configuration.rateLimits.attestationsPerIP)
        challengesPerClient = RateLimiter(perMinute: configuration.rateLimits.challengesPerIP)
        authFailuresPerClient = RateLimiter(perMinute: configuration.rateLimits.authFailuresPerIP)
        credentials = Credentials(
            backendTokens: configuration.backendTokens, adminToken: configuration.adminToken,
            adminPreviousTokens: configuration.adminPreviousTokens)
    }

    /// The names of the route groups: `default` and the configured ones, sorted.
    public var groupNames: [String] { guards.keys.sorted() }

    /// The guard of the route group `group` (its configured enforcement), for a middleware.
    /// - Throws: `group_unknown` (400) for a group that is not configured.
    public func routeGuard(group: String = "default") throws(FlowError) -> RouteGuard {
        guard let routeGuard = guards[group] else {
            throw FlowError(
                .groupUnknown, .malformed,
                "no route group is named so; configured: \(groupNames.joined(separator: ", "))")
        }
        return routeGuard
    }

    /// The guard of a route group under `policy`, with this application's gate, fallbacks, risk policy and metrics.
    public func routeGuard(policy: EnforcementPolicy) -> RouteGuard {
        RouteGuard(
            gate: gate, policy: policy, debugTokens: debugTokens, deviceTokens: deviceTokens,
            riskPolicy: configuration.policy.riskPolicy, metrics: metrics, logger: logger)
    }
}

extension FlowError.Code {
    /// A route group that is not configured (`group_unknown`).
    public static let groupUnknown = FlowError.Code("group_unknown")
}
