import Foundation

extension SQLStore {
    /// Takes or renews a job's lease: one `INSERT … ON CONFLICT (job) DO UPDATE … WHERE` (the lease expired, or
    /// the holder renews) `RETURNING`, under the row's lock (SQLite: on the writer).
    func acquireLease(on job: String, holder: String, duration: Duration, now: Date) async throws(StoreError) -> Bool {
        try StoreLimits.checkLeaseName(job, maximum: 64, "a job name")
        try StoreLimits.checkLeaseName(holder, maximum: 128, "a lease holder")
        let instant = try StoreTime.milliseconds(now, "now")
        let until = try StoreLimits.leaseEnd(instant, duration)
        let parameter = executor.dialect.parameter
        let rows = try await executor.query(
            "taking a job lease",
            SQLStatement(
                """
                INSERT INTO \(executor.table("job_leases")) AS lease (job, holder, expires_at_ms)
                VALUES (\(parameter(1)), \(parameter(2)), \(parameter(3)))
                ON CONFLICT (job) DO UPDATE SET holder = excluded.holder, expires_at_ms = excluded.expires_at_ms
                WHERE lease.expires_at_ms <= \(parameter(4)) OR lease.holder = excluded.holder
                RETURNING holder
                """, [.text(job), .text(holder), .integer(until), .integer(instant)]), access: .write)
        return !rows.isEmpty
    }
}
