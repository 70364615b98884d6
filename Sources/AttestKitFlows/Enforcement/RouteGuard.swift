import AttestKit
import AttestKitStore
import AttestKitWire
public import Logging

/// Decides, once for every framework, whether a request to a guarded route group goes on: the group's
/// ``EnforcementPolicy`` (mode, rollout, least trust), then what the request presents, most trusted first:
///
/// 1. `X-AttestKit-Key-Id` and `X-AttestKit-Assertion` (with a challenge or timestamp): the ``AssertionGate``
///    verifies them, trust `appAttest`;
/// 2. `X-AttestKit-Device-Token`: Apple validates it and the token is used up (``DeviceTokenValidator``), trust
///    `deviceCheck`;
/// 3. `X-AttestKit-Debug-Token`: one of the ``DebugTokens``, trust `debug`;
/// 4. nothing: `assertion_required`.
///
/// The decision is made before Apple is asked: the request's subject (the application's, or the key id sent, in its
/// one canonical spelling) places it in or out of the rollout, and a DeviceCheck token is sent to Apple only when
/// the group enforces for the request and accepts DeviceCheck trust. Otherwise the token is refused without a call
/// (`trust_insufficient`), or, unenforced, reported as `device_token_unchecked`.
///
/// A request proved below the group's ``EnforcementPolicy/minimumTrust`` is refused with `trust_insufficient`.
/// When the group enforces for the request's subject, a refusal is thrown; otherwise (report mode, outside the
/// rollout) it is counted with `mode="report"`, logged, and the request goes on unverified with the refusal on its
/// ``RequestAttestation``. Weaker proof never lowers the bar: while the deployment steps up on risk
/// (``RiskPolicy/isActive``), a request proved by anything less than an App Attest assertion, or not proved, asks
/// for step-up. An edge (the Hummingbird and Vapor `AttestKitMiddleware`s) reads the headers and the body, and maps
/// the thrown ``FlowError`` once.
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

    /// The decision of a group in mode `off`, made without looking at the request: nothing proved, nothing
    /// enforced, a step-up asked under an active risk policy (as for every request unproved); `nil` when the group
    /// reads requests. What the edges put on a request they let through unread, and the decision route answers.
    public var offDecision: RequestAttestation? {
        guard policy.mode == .off else { return nil }
        return RequestAttestation(
            group: policy.group, trust: nil, key: nil, enforced: false, refusal: nil,
            stepUp: riskPolicy.requiresStepUp(trust: nil, metric: nil))
    }

    /// The decision about a request that needs no read of its body, or `nil` when the edge reads the body (up to
    /// `bodyLimit`) and calls ``check(lookup:method:target:alternativeTargets:body:subject:client:)``: an outer
    /// guard's proof, taken as found (``check(after:lookup:subject:)``), else a body declared over the limit in a
    /// request this group does not enforce, let through unread (``unreadBody(lookup:subject:)``). What both edges'
    /// middlewares ask first.
    /// - Parameters:
    ///   - previous: The decision already on the request's context (an outer guard's), if any.
    ///   - declaredLength: The request's `Content-Length`, if it sent one.
    ///   - bodyLimit: The most the edge reads of a body.
    ///   - lookup: Finds a header by name.
    ///   - subject: The rollout subject the application names.
    /// - Throws: What ``check(after:lookup:subject:)`` throws.
    public func decisionBeforeBody(
        previous: RequestAttestation?, declaredLength: Int?, bodyLimit: Int,
        lookup: (String) -> AssertionHeaders.Lookup, subject: String?
    ) throws(FlowError) -> RequestAttestation? {
        if let previous, let decision = try check(after: previous, lookup: lookup, subject: subject) {
            return decision
        }
        guard let declaredLength, declaredLength > bodyLimit else { return nil }
        return unreadBody(lookup: lookup, subject: subject)
    }

    /// The decision about a request whose declared body (its `Content-Length`) is over the edge's limit, without
    /// reading it: `nil` when the group enforces for this request (the edge refuses it, 413 `payload_too_large`,
    /// as before); otherwise (report mode, outside the rollout) the request goes on unverified with
    /// `payload_too_large` as its refusal, counted and logged as every unenforced refusal, so that report mode
    /// refuses no upload it would have let through without the guard. A body over the limit without a declared
    /// length (chunked) cannot be known so before it is read, and is refused 413 in every mode.
    /// - Parameters:
    ///   - lookup: Finds a header by name (the key id places the request in or out of the rollout).
    ///   - subject: The rollout subject the application names, as for
    ///     ``check(lookup:method:target:alternativeTargets:body:subject:client:)``.
    public func unreadBody(lookup: (String) -> AssertionHeaders.Lookup, subject: String? = nil) -> RequestAttestation? {
        guard policy.mode != .off else { return nil }
        guard !enforces(lookup: lookup, subject: subject) else { return nil }
        return reported(FlowError.payloadTooLarge)
    }

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
    ///   - subject: The rollout subject the application names (a user id, say); `nil` (or empty) uses the key id
    ///     sent, in its canonical form. A request with neither is placed by
    ///     ``EnforcementPolicy/enforcesWithoutSubject``.
    ///   - client: Who sent the request (its address, as the edge tells it), for the per-client budget of
    ///     DeviceCheck validations; `nil` shares one budget with every unnamed client.
    /// - Returns: The decision, for the request's context.
    /// - Throws: ``FlowError`` when the group enforces for this request and it is refused.
    public func check(
        lookup: (String) -> AssertionHeaders.Lookup, method: String, target: String,
        alternativeTargets: [String] = [], body: some Sequence<UInt8>, subject: String? = nil, client: String? = nil
    ) async throws(FlowError) -> RequestAttestation {
        // One storage deadline for the request's store calls (key, challenge, counter, used token), as the service's
        // routes and the decision route have: a middleware in an application's own router runs outside them, and
        // each call had a whole operation timeout of its own. It begins now, the body being in: an edge's earlier
        // start would have the store's deadline pay for the body's upload.
        let bytes = Array(body)
        do {
            return try await StoreRequestDeadline.restarting { () async throws(FlowError) -> RequestAttestation in
                try await check(
                    lookup: lookup, method: method, target: target, alternativeTargets: alternativeTargets,
                    body: .bytes(bytes), subject: subject, client: client)
            }
        } catch let error as FlowError {
            throw error
        } catch {
            throw FlowError(converting: error)
                ?? FlowError(.internalError, .internalFailure, "the check failed", underlying: error)
        }
    }

    /// ``check(lookup:method:target:alternativeTargets:body:subject:client:)`` of a request whose body is given
    /// as its bytes or as its SHA-256 (the decision route's `bodySha256`).
    func check(
        lookup: (String) -> AssertionHeaders.Lookup, method: String, target: String, alternativeTargets: [String],
        body: RequestBody, subject: String?, client: String?
    ) async throws(FlowError) -> RequestAttestation {
        if let offDecision { return offDecision }
        let enforced = enforces(lookup: lookup, subject: subject)
        let mode = enforced ? "enforce" : "report"
        do throws(FlowError) {
            let (trust, accepted) = try await prove(
                lookup: lookup, method: method, targets: [target] + alternativeTargets, body: body,
                enforced: enforced, client: client)
            guard trust >= policy.minimumTrust else {
                throw FlowError.trustInsufficient(trust, required: policy.minimumTrust)
            }
            metrics.guardOutcome(group: policy.group, mode: mode, trust: trust.rawValue, code: nil)
            let categoryChanged = accepted?.validationCategoryChanged ?? false
            if categoryChanged { metrics.validationCategoryChangeStepUp("guard") }
            let stepUp = riskPolicy.requiresStepUp(trust: trust, metric: accepted?.key.riskMetric) || categoryChanged
            var decision = RequestAttestation(
                group: policy.group, trust: trust, key: accepted?.key, enforced: enforced, refusal: nil, stepUp: stepUp,
                bundleVersion: accepted?.bundleVersion, validationCategory: accepted?.validationCategory,
                validationCategoryChanged: categoryChanged)
            decision.provedBy = gate.proofMark
            return decision
        } catch {
            metrics.guardOutcome(group: policy.group, mode: mode, trust: "none", code: error.code.rawValue)
            error.signal(metrics: metrics, logger: logger)
            if error.code == .rateLimited { metrics.rateLimited(DeviceTokenValidator.budgetName) }
            guard !enforced else { throw error }
            return reported(error, counted: true)
        }
    }

    /// The decision about a request an outer guard already proved (guards nested on one route), or `nil` when this
    /// guard must decide itself. A proof an outer guard of the same gate found (an assertion, a DeviceCheck token:
    /// spent, so that verified again a valid request would be refused `counter_not_increasing`) is not looked at
    /// again: this group's policy is applied to it. A request proved at this group's least trust or above passes (its
    /// step-up asked again under this guard's risk policy); one proved below it is refused `trust_insufficient` where
    /// this group enforces and reported where it does not, counted under this group as
    /// ``check(lookup:method:target:alternativeTargets:body:subject:client:)`` counts. A request the outer guard
    /// did not prove (nothing presented, a refusal it reported, a DeviceCheck token it did not send to Apple), one
    /// proved by a debug token (spent by nothing: checked again against this guard's list), a DeviceCheck proof where
    /// this guard takes no DeviceCheck tokens, or a decision not made by a guard of this gate (built by the
    /// application, another gate's), gives `nil`: the edge checks the request in full, as if alone. The proof is the
    /// request's as the outer guard verified it: a middleware between the guards must not change the request's
    /// method, target or body, and a decision must never be kept from one request for another.
    /// - Parameters:
    ///   - previous: The outer guard's decision, on the request's context.
    ///   - lookup: Finds a header by name (the key id places the request in or out of this group's rollout).
    ///   - subject: The rollout subject the application names.
    /// - Throws: ``FlowError`` `trust_insufficient` when this group enforces for the request and its proof is below
    ///   the group's least trust.
    public func check(
        after previous: RequestAttestation, lookup: (String) -> AssertionHeaders.Lookup, subject: String? = nil
    ) throws(FlowError) -> RequestAttestation? {
        guard policy.mode != .off, let trust = previous.trust, let mark = previous.provedBy, mark === gate.proofMark
        else { return nil }
        // Only a spent proof is taken as found: a debug token (spent by nothing) is checked again against this
        // guard's own list, and a DeviceCheck token only where this guard would take one at all.
        switch trust {
        case .debug: return nil
        case .deviceCheck where deviceTokens == nil: return nil
        default: break
        }
        let enforced = enforces(lookup: lookup, subject: subject)
        let mode = enforced ? "enforce" : "report"
        guard trust >= policy.minimumTrust else {
            let error = FlowError.trustInsufficient(trust, required: policy.minimumTrust)
            metrics.guardOutcome(group: policy.group, mode: mode, trust: "none", code: error.code.rawValue)
            guard !enforced else { throw error }
            return reported(error, counted: true)
        }
        metrics.guardOutcome(group: policy.group, mode: mode, trust: trust.rawValue, code: nil)
        let stepUp =
            riskPolicy.requiresStepUp(trust: trust, metric: previous.key?.riskMetric)
            || previous.validationCategoryChanged
        var decision = RequestAttestation(
            group: policy.group, trust: trust, key: previous.key, enforced: enforced, refusal: nil, stepUp: stepUp,
            bundleVersion: previous.bundleVersion, validationCategory: previous.validationCategory,
            validationCategoryChanged: previous.validationCategoryChanged)
        decision.provedBy = mark
        return decision
    }

    /// Whether the group enforces for this request: by the subject the application names, or without one (an empty
    /// subject is none: a backend's anonymous user) by the key id it sends (``enforcesByKey(_:)``).
    func enforces(lookup: (String) -> AssertionHeaders.Lookup, subject: String?) -> Bool {
        subject.flatMap { $0.isEmpty ? nil : $0 }.map(policy.enforces) ?? enforcesByKey(lookup)
    }

    /// An unenforced request that would be refused with `error`: logged, counted (unless `counted`, by the caller
    /// already) and let through unverified with `error` as its refusal.
    private func reported(_ error: FlowError, counted: Bool = false) -> RequestAttestation {
        if !counted {
            metrics.guardOutcome(group: policy.group, mode: "report", trust: "none", code: error.code.rawValue)
        }
        logger.notice(
            "unenforced request would be refused", metadata: ["group": "\(policy.group)", "code": "\(error.code)"])
        return RequestAttestation(
            group: policy.group, trust: nil, key: nil, enforced: false, refusal: error,
            stepUp: riskPolicy.requiresStepUp(trust: nil, metric: nil))
    }

    /// Whether the group enforces for a request placed by the key id it sends: by the key's one canonical spelling;
    /// without a key id by ``EnforcementPolicy/enforcesWithoutSubject``. A key id header that is repeated or not in
    /// its canonical spelling names a key and is enforced (refused as malformed) in `enforce` mode, so that no
    /// spelling of a key can move a request out of the rollout or pass it for one without a subject.
    private func enforcesByKey(_ lookup: (String) -> AssertionHeaders.Lookup) -> Bool {
        switch lookup(AttestKitHeaderNames.keyID) {
        case .absent:
            return policy.enforces(nil)
        case .value(let text):
            guard let keyID = try? Field.keyID(text) else { return policy.mode == .enforce }
            return policy.enforces(keyID.base64)
        case .repeated:
            return policy.mode == .enforce
        }
    }

    /// What the request presents, most trusted first, verified. A DeviceCheck token is taken to Apple only when its
    /// answer can change the outcome: the group accepts DeviceCheck trust and enforces for this request.
    private func prove(
        lookup: (String) -> AssertionHeaders.Lookup, method: String, targets: [String], body: RequestBody,
        enforced: Bool, client: String?
    ) async throws(FlowError) -> (TrustLevel, AcceptedAssertion?) {
        if !AssertionHeaders.presented(lookup: lookup) {
            if let token = try lookup(AttestKitHeaderNames.deviceToken).single() {
                guard let deviceTokens else {
                    throw FlowError(
                        .deviceCheckNotConfigured, .refused, "this deployment does not accept DeviceCheck tokens")
                }
                _ = try Field.bytes(token, AttestKitHeaderNames.deviceToken, maximum: 8_192)
                guard policy.minimumTrust <= .deviceCheck else {
                    throw FlowError.trustInsufficient(.deviceCheck, required: policy.minimumTrust)
                }
                guard enforced else { throw FlowError.deviceTokenUnchecked }
                try await deviceTokens.redeem(token, client: client, store: gate.store) { valid, cached in
                    metrics.deviceTokenValidation(valid: valid, cached: cached)
                }
                return (.deviceCheck, nil)
            }
            if let token = try lookup(AttestKitHeaderNames.debugToken).single() {
                _ = try debugTokens.fingerprint(of: token)
                return (.debug, nil)
            }
        }
        let headers = try AssertionHeaders(lookup: lookup)
        // A form refused as `signature_invalid` while another is still to be tried is not the request's refusal, so
        // it is not recorded; any other refusal ends the request and is recorded.
        func verify(
            _ target: String, tryingAnother: Bool = false
        ) async throws(FlowError) -> (TrustLevel, AcceptedAssertion?) {
            let binding =
                switch body {
                case .bytes(let bytes):
                    try AssertionBinding(method: method, target: target, body: bytes, freshness: headers.freshness)
                case .sha256(let digest):
                    try AssertionBinding(
                        method: method, target: target, bodySHA256: digest, freshness: headers.freshness)
                }
            let accepted = try await gate.verify(
                keyID: headers.keyID, assertion: headers.assertion, clientData: binding.clientData,
                freshness: binding.freshness,
                records: { !tryingAnother || $0.code.rawValue != "signature_invalid" })
            return (.appAttest, accepted)
        }
        for target in targets.dropLast() {
            do {
                return try await verify(target, tryingAnother: true)
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
    /// A DeviceCheck token of a request the group does not enforce, reported without asking Apple
    /// (`device_token_unchecked`).
    public static let deviceTokenUnchecked = FlowError.Code("device_token_unchecked")
}

extension FlowError {
    /// 401 `device_token_unchecked`: a DeviceCheck token that was not taken to Apple, since the request is not
    /// enforced (report mode, outside the rollout); what a reported request carries as its refusal.
    public static var deviceTokenUnchecked: FlowError {
        FlowError(
            .deviceTokenUnchecked, .unauthenticated,
            "the DeviceCheck token was not validated: this request is not enforced, so Apple was not asked")
    }

    /// 403 `trust_insufficient`: proved at `trust`, the route needs `required`.
    public static func trustInsufficient(_ trust: TrustLevel, required: TrustLevel) -> FlowError {
        FlowError(
            .trustInsufficient, .refused,
            "the request is proved at trust level \(trust.rawValue); this route needs \(required.rawValue)")
    }
}
