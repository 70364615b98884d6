public import AttestKitWire
import AttestKit
import AttestKitStore

extension AttestKitApplication {
    /// `POST /v1/requests/verify` (backend): the decision a guard makes about a request the backend received, for
    /// backends in any language. The same ``RouteGuard`` as the Swift middlewares decides, under the route group's
    /// configured enforcement (mode, rollout, least trust, the DeviceCheck and debug fallbacks, step-up), with the
    /// same effects: an assertion advances the key's counter once, a DeviceCheck token is used up.
    ///
    /// A refusal is a decision (200, `RequestVerificationResponse.allowed` `false`, with the status and error the
    /// middleware would answer); only a request the route cannot decide about throws.
    ///
    /// A group in `off` mode lets every request through before anything of it is read. A request the group does
    /// not enforce (report mode, a subject outside the rollout) is let through as the middleware lets it through:
    /// a body over `http.body-limit`, a method or target that cannot be bound are its reported refusal.
    ///
    /// - Throws: `group_unknown` for a group that is not configured; `invalid_field`, where the group enforces for
    ///   the request, for a body, hash, method, target or client address that is not well formed (400).
    public func verifyRequest(_ request: RequestVerificationRequest) async throws(FlowError)
        -> RequestVerificationResponse
    {
        try await perform { () async throws(FlowError) in
            let routeGuard = try routeGuard(group: request.group ?? "default")
            let headers = Self.headerLookup(request.headers)
            // As a middleware decides: an `off` group before it looks at the request at all; a request the group
            // does not enforce (report mode, a subject outside the rollout) goes on with a body over the limit as its
            // reported refusal, and with a method or target that cannot be bound left to the guard, which reports it.
            let off = routeGuard.policy.mode == .off
            let enforced = !off && routeGuard.enforces(lookup: headers, subject: request.subject)
            var body = RequestBody.bytes([])
            if !off {
                // Unenforced, a body over the limit is read up to the route's own limit, to be reported.
                let limit = configuration.bodyLimit
                body = try RequestBody(
                    body: request.body, sha256: request.bodySha256,
                    limit: enforced ? limit : JSONBody.decisionLimit(limit))
                if case .bytes(let bytes) = body, bytes.count > limit,
                    let decision = routeGuard.unreadBody(lookup: headers, subject: request.subject)
                {
                    return Self.response(to: decision)
                }
            }
            if enforced {
                do throws(RequestBindingError) {
                    try RequestBinding.check(method: request.method, target: request.target)
                } catch {
                    throw FlowError(error)
                }
            }
            // Counted as the edges count a client: an IPv6 address by its prefix (`rate-limit.ipv6-prefix-length`), so
            // that one subscriber's prefix is one budget, and never by free text a backend passed on (a forwarded
            // header's whole value, say).
            // One that is no address is refused where the group enforces; elsewhere the request goes on in the budget
            // of the requests that name none.
            var client: String?
            if !off, let text = request.client {
                client = ClientAddress.rateLimitKey(
                    address: text, ipv6PrefixLength: configuration.rateLimits.ipv6PrefixLength)
                if client == nil, enforced { throw FlowError.invalidField("client", "is not an IP address") }
            }
            let decision: RequestAttestation
            do throws(FlowError) {
                decision = try await routeGuard.check(
                    lookup: headers, method: request.method, target: request.target, alternativeTargets: [],
                    body: body, subject: request.subject, client: client)
            } catch let refusal {
                // The guard has counted and logged a storage failure under its refusal already.
                return RequestVerificationResponse(
                    allowed: false, group: routeGuard.policy.group, enforced: true, status: refusal.kind.httpStatus,
                    retryAfter: refusal.kind.retryAfter,
                    error: ErrorResponse.Detail(code: refusal.code.rawValue, message: refusal.reason))
            }
            return Self.response(to: decision)
        }
    }

    /// The answer that lets a request through: the guard's decision, with the refusal it reported, if any.
    private static func response(to decision: RequestAttestation) -> RequestVerificationResponse {
        RequestVerificationResponse(
            allowed: true, group: decision.group, enforced: decision.enforced, trust: decision.trust?.rawValue,
            keyId: decision.key?.keyID.base64, counter: decision.key?.counter, stepUp: decision.stepUp,
            error: decision.refusal.map { ErrorResponse.Detail(code: $0.code.rawValue, message: $0.reason) },
            bundleVersion: decision.bundleVersion, validationCategory: decision.validationCategory,
            validationCategoryChanged: decision.validationCategoryChanged ? true : nil)
    }

    /// Looks the AttestKit headers up in `headers`, by name case-insensitively: a name given twice in different
    /// cases, or a value the backend's server joined with commas, is ``AssertionHeaders/Lookup/repeated``.
    static func headerLookup(_ headers: [String: String]) -> (String) -> AssertionHeaders.Lookup {
        var found: [String: [String]] = [:]
        for (name, value) in headers { found[name.lowercased(), default: []].append(value) }
        return { name in AssertionHeaders.Lookup(values: found[name.lowercased()] ?? []) }
    }
}
