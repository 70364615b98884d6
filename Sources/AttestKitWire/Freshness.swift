/// How a request proves it is fresh: the one freshness type of the app side, the wire and the server.
///
/// The client data of an assertion (``RequestBinding``) names a ``challenge(_:)`` or a ``timestamp(milliseconds:)``
/// and the headers carry it (``AttestKitHeaderNames/challenge``, ``AttestKitHeaderNames/timestamp``). A server that
/// verifies client data in the caller's own format enforces no freshness of its own: ``vouchedByCaller`` (only the
/// counter refuses replays). Canonical client data never names ``vouchedByCaller``.
public enum Freshness: Sendable, Hashable {
    /// A one-time challenge id issued by the server (`[A-Za-z0-9_-]`, 1 to 128 characters).
    case challenge(String)
    /// The client's time in Unix milliseconds, accepted within the server's window.
    case timestamp(milliseconds: Int64)
    /// None the server can check: the caller vouches (its own client data).
    case vouchedByCaller

    /// The kind of a freshness, as API answers report what was enforced and an app chooses what to send.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// A one-time challenge (consumed by the server).
        case challenge
        /// The client's clock, within the server's window.
        case timestamp
        /// The caller's own client data: only the counter was enforced.
        case vouched
    }

    /// This freshness's kind.
    public var kind: Kind {
        switch self {
        case .challenge: .challenge
        case .timestamp: .timestamp
        case .vouchedByCaller: .vouched
        }
    }
}
