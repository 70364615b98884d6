/// Best-effort work bounded in time: what must answer by a deadline whatever its dependency does (the gauges a
/// metrics scrape refreshes from the store).
enum TimeLimit {
    /// `body`'s value, or `nil` when it failed or had not answered by `deadline`; its task is then cancelled and
    /// awaited (a store call answers a cancellation at once: PostgreSQL's operation deadline runs the statement in a
    /// task of its own).
    static func value<Value: Sendable>(
        by deadline: ContinuousClock.Instant, _ body: @escaping @Sendable () async throws -> Value
    ) async -> Value? {
        await withTaskGroup(of: Value?.self) { group in
            group.addTask { try? await body() }
            group.addTask {
                try? await Task.sleep(until: deadline, clock: .continuous)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
