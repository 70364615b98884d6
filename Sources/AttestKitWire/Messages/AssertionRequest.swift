/// `POST /v1/assertions/verify` request: `keyId` and `assertion`, and exactly one of ``clientData`` and
/// ``request``; with ``request``, exactly one of ``challengeId`` and ``Parts/timestamp``.
public struct AssertionRequest: Codable, Sendable, Hashable {
    /// The HTTP request the assertion was made for; the server builds the canonical client data from it
    /// (``RequestBinding``). At most one of ``body`` and ``bodySha256``; neither means an empty body.
    public struct Parts: Codable, Sendable, Hashable {
        /// The HTTP method.
        public var method: String
        /// Path and query exactly as sent on the request line.
        public var target: String
        /// The exact body bytes, Base64.
        public var body: String?
        /// SHA-256 of the exact body bytes, 64 hexadecimal digits.
        public var bodySha256: String?
        /// The client's clock in Unix milliseconds (the `timestamp:` freshness).
        public var timestamp: Int64?

        /// Creates the parts.
        public init(
            method: String, target: String, body: String? = nil, bodySha256: String? = nil, timestamp: Int64? = nil
        ) {
            self.method = method
            self.target = target
            self.body = body
            self.bodySha256 = bodySha256
            self.timestamp = timestamp
        }
    }

    /// The key id, Base64.
    public var keyId: String
    /// The CBOR assertion, Base64.
    public var assertion: String
    /// The raw client data the app hashed, Base64.
    public var clientData: String?
    /// The request parts the assertion is bound to.
    public var request: Parts?
    /// With ``request``: the challenge the client data names (the `challenge:` freshness).
    public var challengeId: String?

    /// Creates a request.
    public init(
        keyId: String, assertion: String, clientData: String? = nil, request: Parts? = nil, challengeId: String? = nil
    ) {
        self.keyId = keyId
        self.assertion = assertion
        self.clientData = clientData
        self.request = request
        self.challengeId = challengeId
    }
}
