import Foundation

/// The session token of an ``AttestKitHTTPClient``: kept until shortly before it expires, and fetched once for
/// all the callers that need it meanwhile (single flight).
actor SessionTokenCache {
    private var cached: SessionToken?
    private var fetching: Task<SessionToken, any Error>?

    /// The cached token when it is still good at `now` and is not `refused`, else the one a fetch under way or a
    /// new fetch (`fetch`) brings.
    /// - Parameters:
    ///   - now: The time.
    ///   - margin: How long before its expiry a token is no longer handed out.
    ///   - refused: A token a backend refused: dropped when it is still the cached one (another caller may have
    ///     replaced it already, and then that newer token is answered).
    ///   - fetch: Gets a new token.
    func token(
        now: Date, margin: TimeInterval, refused: SessionToken?,
        fetch: @escaping @Sendable () async throws -> SessionToken
    ) async throws -> SessionToken {
        if let refused, cached == refused { cached = nil }
        if let cached, now < cached.expiresAt.addingTimeInterval(-margin) { return cached }
        if let fetching { return try await fetching.value }
        let task = Task { try await fetch() }
        fetching = task
        defer { fetching = nil }
        let token = try await task.value
        cached = token
        return token
    }

    /// Drops the cached token.
    func invalidate() { cached = nil }
}
