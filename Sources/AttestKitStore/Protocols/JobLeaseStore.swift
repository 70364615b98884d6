public import Foundation

/// Where the leases of background jobs live, so that replicas sharing a store run a job that needs one runner
/// (the cleanups) on one replica at a time, and another takes over when that one stops renewing.
///
/// One of the small protocols ``AttestationStore`` composes.
public protocol JobLeaseStore: Sendable {
    /// Takes or renews the lease on `job` for `holder` until `now + duration`, with one atomic statement: it
    /// succeeds when no one holds the lease, when the holder's lease expired at or before `now`, or when `holder`
    /// holds it already (a renewal). Of concurrent callers with different holders, at most one gets a free lease.
    /// - Parameters:
    ///   - job: The job's name, 1 to 64 printable ASCII characters.
    ///   - holder: Who asks (a replica's identifier), 1 to 128 printable ASCII characters.
    ///   - duration: How long the lease lasts, 1 second to 1 day.
    ///   - now: The time of the call.
    /// - Returns: Whether `holder` holds the lease now.
    /// - Throws: ``StoreError/Code/invalidInput`` for a name, holder or duration outside the bounds.
    func acquireLease(on job: String, holder: String, duration: Duration, now: Date) async throws(StoreError) -> Bool
}
