/// `POST /v1/tokens` answer (201): a session token and when it expires.
public struct TokenResponse: Codable, Sendable, Hashable {
    /// The compact JWS (`header.payload.signature`), ES256.
    public var token: String
    /// When the token expires: RFC 3339 in UTC with milliseconds.
    public var expiresAt: String

    /// Creates the answer.
    public init(token: String, expiresAt: String) {
        self.token = token
        self.expiresAt = expiresAt
    }
}

/// `POST /v1/tokens/consume` request: a limited-use token, accepted once.
public struct TokenConsumeRequest: Codable, Sendable, Hashable {
    /// The token as `POST /v1/tokens` issued it.
    public var token: String

    /// Creates the request.
    public init(token: String) {
        self.token = token
    }
}

extension TokenResponse: CustomStringConvertible, CustomReflectable {
    /// Never the session token: printing or logging the message shows no secret.
    public var description: String { "TokenResponse(expiresAt: \(expiresAt))" }

    /// No children: the session token is a secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}

extension TokenConsumeRequest: CustomStringConvertible, CustomReflectable {
    /// Never the token: printing or logging the message shows no secret.
    public var description: String { "TokenConsumeRequest()" }

    /// No children: the token is a secret.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
}
