import AttestKitStore

extension AttestKitApplication {
    /// Whether the store answers (`/ready`), setting `attestkit_storage_up`.
    /// - Throws: 503 `storage_unavailable` when it does not (not logged: probes ask often).
    public func ready() async throws(FlowError) {
        do {
            _ = try await StoreRequestDeadline.withRequest { try await store.keyCounts() }
            metrics.storage(up: true)
        } catch {
            metrics.storage(up: false)
            throw FlowError(.init("storage_unavailable"), .unavailable(retryAfter: nil), "storage is unavailable")
        }
    }

    /// Refreshes the gauges read from the store (keys by environment and state, storage up) before they are read.
    public func refreshGauges() async {
        if let counts = try? await store.keyCounts() {
            metrics.keys(counts)
            metrics.storage(up: true)
        } else {
            metrics.storage(up: false)
        }
    }
}
