import AttestKit
import AttestKitFlows

/// What an edge is built with for one test: the enforcement of its guarded route group `orders`, the fallbacks it
/// accepts, its risk policy and whether it sells session tokens. Every edge turns the same value into its own
/// settings (``HummingbirdEdge``, ``VaporEdge``, ``DecisionEdge``), so that one test states one deployment.
struct EdgeConfiguration: Sendable {
    /// The name of the guarded route group (`/orders` and everything under it).
    static let group = "orders"
    /// The backend's bearer token (`backend.tokens`): what a backend presents to the decision route and to
    /// `POST /v1/tokens/consume`.
    static let backendToken = "edge-backend-token-0123456789"
    /// The operator's token (`admin.token`), of the key routes and the dashboard.
    static let adminToken = "edge-admin-token-0123456789abcdef"

    /// Mode, rollout and least trust of the group `orders`.
    var enforcement = AttestKitApplication.Configuration.EnforcementDefaults()
    /// `debug.tokens`.
    var debugTokens: [String] = []
    /// Whether DeviceCheck tokens are validated, by the mock Apple (``EdgeApple``).
    var deviceCheck = false
    /// `devicecheck.validations-per-client`.
    var deviceTokenValidationsPerClient = DeviceTokenValidator.defaultValidationsPerClient
    /// `policy.*`: when a key's risk asks for step-up.
    var policy = DeploymentPolicy()
    /// Whether `POST /v1/tokens` sells session tokens (`tokens.*`), where the edge has the route.
    var sessionTokens = false
    /// `apps`: the accepted apps.
    var apps = [EdgeFixture.appID]
    /// `ramp.*`: the attestation ramp (off by default).
    var ramp = AttestationRamp()

    /// The group's policy, for an edge that builds its middleware from one.
    func enforcementPolicy() throws -> EnforcementPolicy {
        try enforcement.policy(group: Self.group)
    }
}

/// Headers of the suite's own, which the guarded `/orders` routes of every edge read and write (never AttestKit's).
enum EdgeHeaders {
    /// Request: the rollout subject the application names (a user id), instead of the key id sent.
    static let subject = "X-Edge-Subject"
    /// Request: who sent the request, for the per-client budget of DeviceCheck validations, where the edge lets the
    /// application name it (a proxy's header); otherwise the edge names the peer.
    static let client = "X-Edge-Client"
    /// Answer: the trust level of the decision, `none` when nothing proved the request.
    static let trust = "X-Edge-Trust"
    /// Answer: whether the group enforced for the request (`true`/`false`).
    static let enforced = "X-Edge-Enforced"
    /// Answer: whether the decision asks for step-up (`true`/`false`).
    static let stepUp = "X-Edge-Step-Up"
    /// Answer: whether step-up is asked for because the validation category changed since registration.
    static let categoryChanged = "X-Edge-Category-Changed"
    /// Answer: what enforcing would have refused, for a request let through unverified; `-` otherwise.
    static let refusal = "X-Edge-Refusal"

    /// The answer headers of a decision that let the request through.
    static func decision(
        trust: String?, enforced: Bool, stepUp: Bool, refusal: String?, categoryChanged: Bool = false
    ) -> [(String, String)] {
        [
            (Self.trust, trust ?? "none"), (Self.enforced, "\(enforced)"), (Self.stepUp, "\(stepUp)"),
            (Self.refusal, refusal ?? "-"), (Self.categoryChanged, "\(categoryChanged)"),
        ]
    }

    /// The answer headers of `attestation`.
    static func decision(_ attestation: RequestAttestation?) -> [(String, String)] {
        decision(
            trust: attestation?.trust?.rawValue, enforced: attestation?.enforced ?? false,
            stepUp: attestation?.stepUp ?? false, refusal: attestation?.refusal?.code.rawValue,
            categoryChanged: attestation?.validationCategoryChanged ?? false)
    }
}
