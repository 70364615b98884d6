import AttestKitStore
import AttestKitWire
public import Logging

/// Decides, once for every framework, whether a request to a guarded route group goes on: the group's
/// ``EnforcementPolicy`` (mode, rollout, least trust), then what the request presents, most trusted first:
///
/// 1. `X-AttestKit-Key-Id` and `X-AttestKit-Assertion` (with a challenge or timestamp): the ``AssertionGate``
///    verifies them, trust `appAttest`;
/// 2. `X-AttestKit-Device-Token`: Apple validates it (``DeviceTokenValidator``, cached), trust `deviceCheck`;
/// 3. `X-AttestKit-Debug-Token`: one of the ``DebugTokens``, trust `debug`;
/// 4. nothing: `assertion_required`.
///
/// A request proved below the group's ``EnforcementPolicy/minimumTrust`` is refused with `trust_insufficient`.
/// When the group enforces for the request's subject, a refusal is thrown; otherwise (report mode, outside the
/// rollout) it is counted with `mode="report"`, logged, and the request goes on unverified with the refusal on its
/// ``RequestAttestation``. An edge (the Hummingbird and Vapor `AttestKitMiddleware`s) reads the headers and the
/// body, and maps the thrown ``FlowError`` once.
///
/// The header names are `AttestKitHeaderNames`.
public struct RouteGuard: Sendable {
    /// The assertion gate.
    public let gate: AssertionGate
    /// The group's policy.
    public let policy: EnforcementPolicy
    /// The debug tokens accepted.
    public let debugTokens: DebugTokens
    /// The DeviceCheck fallback, or `nil` to refuse device tokens (`devicecheck_not_configured`).
    public let deviceTokens: DeviceTokenValidator?
    /// When step-up is asked for.
    public let riskPolicy: RiskPolicy
    /// Where outcomes are counted.
    public let metrics: FlowMetrics
    private let logger: Logger

    /// A guard of one route group.
    public init(
        gate: AssertionGate, policy: EnforcementPolicy = .enforceAll, debugTokens: DebugTokens = .none,
        deviceTokens: DeviceTokenValidator? = nil, riskPolicy: RiskPolicy = RiskPolicy(),
        metrics: FlowMetrics = FlowMetrics(), logger: Logger = Logger(label: "attestkit.guard")
    ) {
        self.gate = gate
        self.policy = policy
        self.debugTokens = debugTokens
        self.deviceTokens = deviceTokens
        self.riskPolicy = riskPolicy
        self.metrics = metrics
        self.logger = logger
    }

    /// Whether the guard reads the request at all (not in mode `off`): an edge collects the body only then.
    public var readsRequests: Bool { policy.mode != .off }

    /// Decides about one request.
    ///
    /// - Parameters:
    ///   - lookup: Finds a header by name (``AssertionHeaders/Lookup``).
    ///   - method: The request's method.
    ///   - target: The path and query as sent.
    ///   - alternativeTargets: Other spellings of the same target that the edge cannot tell apart from `target`
    ///     (Vapor turns a path's `%3B` into `;`): each is tried, in order, only after a `signature_invalid`, which
    ///     changes nothing in the store.
    ///   - body: The body (collected by the edge up to its limit).
    ///   - subject: The rollout subject the application names (a user id, say); `nil` uses the key id sent.
    /// - Returns: The decision, for the request's context.
    /// - Throws: ``FlowError`` when the group enforces for this request and it is refused.
    public func check(
        lookup: (String) -> AssertionHeaders.Lookup, method: String, target: String,
        alternativeTargets: [String] = [], body: some Sequence<UInt8>, subject: String? = nil
    ) async throws(FlowError) -> RequestAttestation {
        guard policy.mode != .off else {
            return RequestAttestation(
                group: policy.group, trust: nil, key: nil, enforced: false, refusal: nil, stepUp: false)
        }
        let keyText: String? = if case .value(let text) = lookup(AttestKitHeaderNames.keyID) { text } else { nil }
        let enforced = policy.enforces(subject ?? keyText)
        let mode = enforced ? "enforce" : "report"
        do throws(FlowError) {
            let (trust, key) = try await prove(
                lookup: lookup, method: method, targets: [target] + alternativeTargets, body: Array(body))
            guard trust >= policy.minimumTrust else {
                throw FlowError.trustInsufficient(trust, required: policy.minimumTrust)
            }
            metrics.guardOutcome(group: policy.group, mode: mode, trust: trust.rawValue, code: nil)
            let stepUp = riskPolicy.requiresStepUp(key?.riskMetric)
            return RequestAttestation(
                group: policy.group, trust: trust, key: key, enforced: enforced, refusal: nil, stepUp: stepUp)
        } catch {
            metrics.guardOutcome(group: policy.group, mode: mode, trust: "none", code: error.code.rawValue)
            guard !enforced else { throw error }
            logger.notice(
                "unenforced request would be refused",
                metadata: ["group": "\(policy.group)", "code": "\(error.code)"])
            return RequestAttestation(
                group: policy.group, trust: nil, key: nil, enforced: false, refusal: error,
                stepUp: riskPolicy.requiresStepUp(nil))
        }
    }

    /// What the request presents, most trusted first, verified.
    private func prove(
        lookup: (String) -> AssertionHeaders.Lookup, method: String, targets: [String], body: [UInt8]
    ) async throws(FlowError) -> (TrustLevel, KeyRecord?) {
        if !AssertionHeaders.presented(lookup: lookup) {
            if let token = try lookup(AttestKitHeaderNames.deviceToken).single() {
                guard let deviceTokens else {
                    throw FlowError(
                        .deviceCheckNotConfigured, .refused, "this deployment does not accept DeviceCheck tokens")
                }
                _ = try Field.bytes(token, AttestKitHeaderNames.deviceToken, maximum: 8_192)
                let answer = try await deviceTokens.isValid(token)
                metrics.deviceTokenValidation(valid: answer.valid, cached: answer.cached)
                guard answer.valid else {
                    throw FlowError(.deviceTokenInvalid, .refused, "Apple does not validate the DeviceCheck token")
                }
                return (.deviceCheck, nil)
            }
            if let token = try lookup(AttestKitHeaderNames.debugToken).single() {
                _ = try debugTokens.fingerprint(of: token)
                return (.debug, nil)
            }
        }
        let headers = try AssertionHeaders(lookup: lookup)
        func verify(_ target: String) async throws(FlowError) -> (TrustLevel, KeyRecord?) {
            let binding = try AssertionBinding(
                method: method, target: target, body: body, freshness: headers.freshness)
            let accepted = try await gate.verify(keyID: headers.keyID, assertion: headers.assertion, binding: binding)
            return (.appAttest, accepted.key)
        }
        for target in targets.dropLast() {
            do {
                return try await verify(target)
            } catch  where error.code.rawValue == "signature_invalid" {
                continue
            }
        }
        return try await verify(targets.last ?? "")
    }
}

extension FlowError.Code {
    /// A request proved below the least trust of its route (`trust_insufficient`).
    public static let trustInsufficient = FlowError.Code("trust_insufficient")
    /// A DeviceCheck token Apple does not validate (`device_token_invalid`).
    public static let deviceTokenInvalid = FlowError.Code("device_token_invalid")
    /// A DeviceCheck token sent to a deployment without the fallback (`devicecheck_not_configured`).
    public static let deviceCheckNotConfigured = FlowError.Code("devicecheck_not_configured")
    /// A debug token that is not one of the deployment's (`debug_token_invalid`).
    public static let debugTokenInvalid = FlowError.Code("debug_token_invalid")
    /// Debug tokens configured while production keys are allowed (`debug_tokens_refused`).
    public static let debugTokensRefused = FlowError.Code("debug_tokens_refused")
}

extension FlowError {
    /// 403 `trust_insufficient`: proved at `trust`, the route needs `required`.
    public static func trustInsufficient(_ trust: TrustLevel, required: TrustLevel) -> FlowError {
        FlowError(
            .trustInsufficient, .refused,
            "the request is proved at trust level \(trust.rawValue); this route needs \(required.rawValue)")
    }
}
