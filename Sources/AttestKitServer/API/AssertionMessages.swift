/// `POST /v1/assertions/verify` request.
struct AssertionRequest: Decodable {
    /// The request parts the assertion is bound to.
    struct Parts: Decodable {
        var method: String
        var target: String
        var body: String?
        var bodySha256: String?
        var timestamp: Int64?
    }

    var keyId: String
    var assertion: String
    var clientData: String?
    var request: Parts?
    var challengeId: String?
}

/// `POST /v1/assertions/verify` answer.
struct AssertionResponse: Encodable {
    var keyId: String
    var counter: UInt32
    var environment: String
    var riskMetric: Int?
    /// `unknown` until Apple rated the key, then `assessed`.
    var riskStatus: String
    var stepUp: Bool
    /// The freshness the service enforced: `challenge` (consumed), `timestamp` (within the window) or `vouched`
    /// (the caller's own client data: only the counter was enforced).
    var freshness: String
}
