/// One deadline for all the store calls made for one request.
///
/// A PostgreSQL store call ends within ``PostgresStoreConfiguration/operationTimeout``. A request that makes several
/// calls in sequence (read the key, consume the challenge, advance the counter) could take that long for each; a
/// server that runs the handling of each request in ``withRequest(_:)`` makes every call of the request end by the
/// request's start plus the operation timeout instead, so the request is answered within one operation timeout of
/// the time its decision begins: a use case restarts it once the request's body is in (``restarting(_:)``), and
/// again after an answer from Apple, neither of which is the store's time.
/// Calls outside it (background work, tools) keep a deadline each. The other stores have no operation timeout and
/// ignore it.
public enum StoreRequestDeadline {
    /// When the current request began, if a caller set it.
    @TaskLocal static var began: ContinuousClock.Instant?

    /// Runs `body` as one request beginning now: the store calls it makes share one deadline. Nested in another
    /// `withRequest` (a server's request middleware around routes that set it too), it keeps the outer start: the
    /// request began once.
    public static func withRequest<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        // Nested: the outer start stands, and no task-local value is bound again (the assertion route passes three).
        if began != nil { return try await body() }
        return try await $began.withValue(.now) { try await body() }
    }

    /// Runs `body` as the rest of the current request, beginning now even inside another `withRequest`: the store
    /// calls it makes share one deadline from now. For the part of a request that follows a wait the store has no
    /// part in, which the shared deadline should not pay for: the request's body arriving (a client may send it
    /// slowly, up to the server's read timeout), an answer from Apple (up to its own timeout).
    public static func restarting<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        try await $began.withValue(.now) { try await body() }
    }

    /// Runs `body` outside the current request's shared deadline: each store call it makes has its own whole
    /// operation timeout. For a best-effort repair after a call of the request failed at that deadline (giving a
    /// consumed challenge back), which the spent deadline would otherwise refuse at once.
    public static func withOwnDeadlines<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        try await $began.withValue(nil) { try await body() }
    }
}
