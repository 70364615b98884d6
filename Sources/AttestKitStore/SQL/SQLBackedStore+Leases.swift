import Foundation

extension SQLBackedStore {
    // MARK: JobLeaseStore

    /// Takes or renews a job's lease in one statement.
    public func acquireLease(
        on job: String, holder: String, duration: Duration, now: Date
    ) async throws(StoreError) -> Bool {
        try await sql.acquireLease(on: job, holder: holder, duration: duration, now: now)
    }
}
