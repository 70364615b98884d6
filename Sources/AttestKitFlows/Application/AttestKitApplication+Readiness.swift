public import AttestKitStore
import Foundation

extension AttestKitApplication {
    /// Whether this replica should be sent requests (`/ready`), answered from the state it keeps and one round trip
    /// of constant cost, whatever the store holds: the replica is not draining (``startDraining()``), the store
    /// answers within the request's storage deadline (`AttestationStore.databaseTime()`: PostgreSQL's clock, read
    /// in the round trip of a `SELECT 1`; SQLite's `SELECT 1`), and this replica's clock is within
    /// `storage.max-clock-skew` of the database's (``ClockSkewCheck``). The schema is migrated
    /// (`AttestationStore.prepare()`) before either edge listens, so a replica that answers has it. Sets
    /// `attestkit_storage_up` and `attestkit_clock_skew_seconds` (left as they were while draining).
    /// - Throws: 503 `draining` while the replica shuts down; 503 `storage_unavailable` when the store does not
    ///   answer; 503 `clock_skew` when the clocks differ by more than the maximum (none logged: probes ask often; a
    ///   change of the clock's state is logged once by ``ClockSkewCheck``).
    public func ready() async throws(FlowError) {
        guard !isDraining else {
            throw FlowError(.draining, .unavailable(retryAfter: nil), "this replica is shutting down (draining)")
        }
        let skew: TimeInterval?
        do {
            skew = try await StoreRequestDeadline.withRequest { try await clockCheck.measure() }
            metrics.storage(up: true)
        } catch {
            metrics.storage(up: false)
            throw FlowError(.init("storage_unavailable"), .unavailable(retryAfter: nil), "storage is unavailable")
        }
        if let skew, clockCheck.exceeds(skew) { throw clockCheck.refusal(skew) }
    }

    /// Refreshes the gauges read from the store (keys by environment and state, storage up, the clock's skew) before
    /// they are read, within ``gaugeRefreshLimit``: a scrape is answered in time whatever the store does, so that
    /// `attestkit_storage_up` 0 reaches the monitoring while the store hangs (a scrape that waited for the store's
    /// own deadline, 10 seconds by default, would outlast Prometheus' scrape timeout, also 10 seconds, and the
    /// storage alert would see nothing).
    /// - Returns: The key counts the store gave, or `nil` when it could not answer in time (the storage gauge then
    ///   says so; the key gauges keep their last values).
    @discardableResult
    public func refreshGauges() async -> KeyCounts? {
        let deadline = ContinuousClock.now + Self.gaugeRefreshLimit
        guard let counts = await TimeLimit.value(by: deadline, { [store] in try await store.keyCounts() }) else {
            metrics.storage(up: false)
            return nil
        }
        metrics.keys(counts)
        metrics.storage(up: true)
        _ = await TimeLimit.value(by: deadline) { [clockCheck] in try await clockCheck.measure() }
        return counts
    }

    /// How long a scrape waits for the gauges read from the store: 2 seconds, well within any scrape timeout.
    public static let gaugeRefreshLimit = Duration.seconds(2)
}
