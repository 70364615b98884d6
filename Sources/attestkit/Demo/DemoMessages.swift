/// The JSON bodies the demo sends to and reads from the AttestKit server, as the HTTP API contract spells them
/// (docs: api-contract). Only the fields the demo uses; unknown fields are ignored on both sides.
enum DemoMessages {
    /// `POST /v1/challenges`.
    struct ChallengeRequest: Encodable, Sendable {
        var purpose: String
        var keyId: String?
    }

    /// `POST /v1/challenges` answer.
    struct Challenge: Decodable, Sendable {
        var challengeId: String
        var challenge: String
        var purpose: String
    }

    /// `POST /v1/attestations`.
    struct AttestationRequest: Encodable, Sendable {
        var keyId: String
        var attestation: String
        var challengeId: String
    }

    /// `POST /v1/assertions/verify` with the request parts the assertion is bound to.
    struct AssertionRequest: Encodable, Sendable {
        /// The bound request: method, target, Base64 body and, without a challenge, the client's clock.
        struct Parts: Encodable, Sendable {
            var method: String
            var target: String
            var body: String?
            var timestamp: Int64?
        }

        var keyId: String
        var assertion: String
        var request: Parts
        var challengeId: String?
    }

    /// `POST /v1/assertions/verify` answer.
    struct AssertionResult: Decodable, Sendable {
        var counter: Int
        var stepUp: Bool
    }

    /// A registered key (`POST /v1/attestations`, admin `GET /v1/keys/{keyId}`).
    struct KeyRecord: Decodable, Sendable {
        /// One entry of the admin view's risk history.
        struct RiskEntry: Decodable, Sendable {
            var riskMetric: Int
        }

        var keyId: String
        var appId: String
        var environment: String
        var counter: Int
        var riskMetric: Int?
        var stepUp: Bool
        var riskHistory: [RiskEntry]?
    }

    /// `POST /v1/devicecheck/query`.
    struct DeviceTokenRequest: Encodable, Sendable {
        var deviceToken: String
    }

    /// `POST /v1/devicecheck/update` (bit 0 only).
    struct DeviceCheckUpdateRequest: Encodable, Sendable {
        var deviceToken: String
        var bit0: Bool
    }

    /// `POST /v1/devicecheck/query` answer.
    struct DeviceCheckBits: Decodable, Sendable {
        var found: Bool
        var bit0: Bool
        var bit1: Bool
    }

    /// `POST /v1/devicecheck/update` answer.
    struct DeviceCheckUpdated: Decodable, Sendable {
        var updated: Bool
    }

    /// Every error answer: `{"error": {"code", "message"}}`.
    struct ErrorBody: Decodable, Sendable {
        /// The error's code and text.
        struct Detail: Decodable, Sendable {
            var code: String
            var message: String
        }

        var error: Detail
    }
}
