/// `POST /v1/requests/verify` request (backend): a request the backend received from its app, for the decision a
/// guard (`AttestKitMiddleware`) would make about it under the settings of the route group ``group``.
///
/// The backend passes what it received, unchanged: the method, the target (path and query exactly as sent on the
/// request line), the body (Base64) or its SHA-256, and the app's `X-AttestKit-*` headers.
public struct RequestVerificationRequest: Codable, Sendable, Hashable {
    /// The route group whose enforcement applies (`enforcement.groups`); `default` when absent.
    public var group: String?
    /// The HTTP method.
    public var method: String
    /// Path and query exactly as sent on the request line.
    public var target: String
    /// The exact body bytes, Base64. At most one of ``body`` and ``bodySha256``; neither means an empty body.
    public var body: String?
    /// SHA-256 of the exact body bytes, 64 hexadecimal digits.
    public var bodySha256: String?
    /// The request's AttestKit headers by name (`X-AttestKit-Key-Id`, `X-AttestKit-Assertion`,
    /// `X-AttestKit-Challenge` or `X-AttestKit-Timestamp`, `X-AttestKit-Device-Token`, `X-AttestKit-Debug-Token`);
    /// names are case-insensitive, other headers are ignored. A name given twice in different cases is a repeated
    /// header, refused.
    public var headers: [String: String]
    /// The rollout subject (a user id, say); absent or empty: the key id the request sends.
    public var subject: String?
    /// The IP address of the app's client, for the per-client budget of DeviceCheck validations (an IPv6 address
    /// counted by its prefix, `rate-limit.ipv6-prefix-length`, a /64 by default; anything but an IP address is
    /// refused); absent: one budget shared by every request without one.
    public var client: String?

    /// The JSON members of this request. The route refuses any other member, a `null` member and a member given twice
    /// (400 `invalid_json`): each of them changes the decision, so a misspelling must not fall back to a default.
    public static let members: Set<String> = [
        "group", "method", "target", "body", "bodySha256", "headers", "subject", "client",
    ]

    /// Creates a request.
    public init(
        group: String? = nil, method: String, target: String, body: String? = nil, bodySha256: String? = nil,
        headers: [String: String], subject: String? = nil, client: String? = nil
    ) {
        self.group = group
        self.method = method
        self.target = target
        self.body = body
        self.bodySha256 = bodySha256
        self.headers = headers
        self.subject = subject
        self.client = client
    }
}

/// `POST /v1/requests/verify` answer (200): the guard's decision.
///
/// Let the request through only when ``allowed`` is `true`. When it is `false`, answer the app with ``status``,
/// `Retry-After` ``retryAfter`` when given, and the ``error`` envelope, as the middleware would. Any other answer
/// of the route (401, 400, 503, a timeout) is no decision: refuse the request (fail closed).
public struct RequestVerificationResponse: Codable, Sendable, Hashable {
    /// Whether the request goes on.
    public var allowed: Bool
    /// The route group decided under.
    public var group: String
    /// Whether the group enforced for this request (`enforce` mode, in the rollout).
    public var enforced: Bool
    /// What proved the request (`app_attest`, `devicecheck`, `debug`), absent when nothing did.
    public var trust: String?
    /// The key whose assertion was verified, Base64, at trust `app_attest`.
    public var keyId: String?
    /// The key's counter after this request, at trust `app_attest`.
    public var counter: UInt32?
    /// Whether to ask for step-up (the key's risk, weaker proof while the deployment steps up on risk, or a change
    /// of validation category since registration: ``validationCategoryChanged``).
    public var stepUp: Bool
    /// For a refused request (``allowed`` `false`): the HTTP status to answer the app with.
    public var status: Int?
    /// For a refused request: seconds to send as `Retry-After`, when the refusal has them.
    public var retryAfter: Int?
    /// For a refused request: the refusal; for a request let through unverified (report mode, outside the
    /// rollout): what enforcing would have refused.
    public var error: ErrorResponse.Detail?
    /// iOS 27+: the bundle version the verified assertion reported, at trust `app_attest`; absent before iOS 27, and
    /// for a key attested before iOS 27 (whose assertions' map nothing binds).
    public var bundleVersion: String?
    /// iOS 27+: the validation category the verified assertion reported (a number: 4 is the App Store), at trust
    /// `app_attest`; absent as ``bundleVersion`` is.
    public var validationCategory: UInt32?
    /// `true` when step-up is asked for because the verified assertion reports another validation category than its
    /// key's attestation did (`policy.validation-category-change` `step-up`); absent otherwise.
    public var validationCategoryChanged: Bool?

    /// Creates an answer.
    public init(
        allowed: Bool, group: String, enforced: Bool, trust: String? = nil, keyId: String? = nil,
        counter: UInt32? = nil, stepUp: Bool = false, status: Int? = nil, retryAfter: Int? = nil,
        error: ErrorResponse.Detail? = nil, bundleVersion: String? = nil, validationCategory: UInt32? = nil,
        validationCategoryChanged: Bool? = nil
    ) {
        self.validationCategoryChanged = validationCategoryChanged
        self.allowed = allowed
        self.group = group
        self.enforced = enforced
        self.trust = trust
        self.keyId = keyId
        self.counter = counter
        self.stepUp = stepUp
        self.status = status
        self.retryAfter = retryAfter
        self.error = error
        self.bundleVersion = bundleVersion
        self.validationCategory = validationCategory
    }
}

extension RequestVerificationRequest: CustomStringConvertible, CustomReflectable {
    /// The group, method, target and the names of the headers; never a header's value (a DeviceCheck or debug token,
    /// an assertion), so that printing or logging the request shows no secret.
    public var description: String {
        "RequestVerificationRequest(group: \(group ?? "default"), \(method) \(target), headers: "
            + "\(headers.keys.sorted()))"
    }

    /// No children: ``headers`` holds tokens.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
