import Foundation

/// The session token of an ``AttestKitHTTPClient``: kept until shortly before it expires, and fetched once for
/// all the callers that need it meanwhile (single flight).
actor SessionTokenCache {
    /// A token, with the key whose assertion bought it.
    struct Entry: Sendable, Equatable {
        /// The token.
        let token: SessionToken
        /// The key the token names, `nil` for one bought with the debug token: the key a backend's refusal of the
        /// token as `key_not_found`, `key_expired` or `key_revoked` is about.
        let keyID: String?
    }

    private var cached: Entry?
    private var fetching: Task<Entry, any Error>?
    /// How many times ``invalidate()`` was called: a fetch started before the last one stores nothing.
    private var generation = 0

    /// The cached token when it is still good at `now` and is not `refused`, else the one a fetch under way or a
    /// new fetch (`fetch`) brings.
    ///
    /// An ``invalidate()`` during a fetch wins: the fetch's token goes to the callers that were waiting for it
    /// before the invalidation (they asked before it, as a caller that had the token already), but it is not
    /// cached, and a caller arriving after the invalidation starts a fetch of its own.
    /// - Parameters:
    ///   - now: The time.
    ///   - margin: How long before its expiry a token is no longer handed out.
    ///   - refused: A token a backend refused: dropped when it is still the cached one (another caller may have
    ///     replaced it already, and then that newer token is answered).
    ///   - fetch: Gets a new token.
    func token(
        now: Date, margin: TimeInterval, refused: SessionToken?,
        fetch: @escaping @Sendable () async throws -> Entry
    ) async throws -> Entry {
        if let refused { drop(refused) }
        if let cached, now < cached.token.expiresAt.addingTimeInterval(-margin) { return cached }
        if let fetching { return try await fetching.value }
        let task = Task { try await fetch() }
        let started = generation
        fetching = task
        defer { if fetching == task { fetching = nil } }
        let entry = try await task.value
        if generation == started { cached = entry }
        return entry
    }

    /// Drops `token` when it is still the cached one.
    func drop(_ token: SessionToken) {
        if cached?.token == token { cached = nil }
    }

    /// Drops the cached token, and the fetch under way: the token it brings is not cached, and the next
    /// ``token(now:margin:refused:fetch:)`` fetches a new one.
    func invalidate() {
        cached = nil
        fetching = nil
        generation += 1
    }
}
