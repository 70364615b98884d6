public import AttestKitStore

extension AttestKitApplication {
    /// Whether this replica should be sent requests (`/ready`), answered from the state it keeps and one round trip
    /// of constant cost, whatever the store holds: the replica is not draining (``startDraining()``), and the store
    /// answers its ping (`AttestationStore.ping()`, `SELECT 1` on SQL) within the request's storage deadline.
    /// The schema is migrated (`AttestationStore.prepare()`) before either edge listens, so a replica that answers
    /// has it. Sets `attestkit_storage_up` (left as it was while draining).
    /// - Throws: 503 `draining` while the replica shuts down; 503 `storage_unavailable` when the store does not
    ///   answer (neither logged: probes ask often).
    public func ready() async throws(FlowError) {
        guard !isDraining else {
            throw FlowError(.draining, .unavailable(retryAfter: nil), "this replica is shutting down (draining)")
        }
        do {
            try await StoreRequestDeadline.withRequest { try await store.ping() }
            metrics.storage(up: true)
        } catch {
            metrics.storage(up: false)
            throw FlowError(.init("storage_unavailable"), .unavailable(retryAfter: nil), "storage is unavailable")
        }
    }

    /// Refreshes the gauges read from the store (keys by environment and state, storage up) before they are read.
    /// - Returns: The key counts the store gave, or `nil` when it could not answer (the storage gauge then says so).
    @discardableResult
    public func refreshGauges() async -> KeyCounts? {
        if let counts = try? await store.keyCounts() {
            metrics.keys(counts)
            metrics.storage(up: true)
            return counts
        } else {
            metrics.storage(up: false)
            return nil
        }
    }
}
