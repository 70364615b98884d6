import Foundation

extension SQLStore {
    /// Opens a dashboard session in one transaction: deletes the sessions expired at `now`, inserts this one, then
    /// deletes the oldest others past `capacity` (the newest `capacity - 1` others are kept, so the new session
    /// always is). Logins on every client of the database take turns, so that the capacity holds fleet-wide.
    func openDashboardSession(
        _ digest: [UInt8], expiresAt: Date, capacity: Int, now: Date
    ) async throws(StoreError) {
        try StoreLimits.checkSessionDigest(digest)
        try StoreLimits.checkSessionCapacity(capacity)
        let instant = try StoreTime.milliseconds(now, "now")
        let expiry = try StoreTime.milliseconds(expiresAt, "expiresAt")
        guard expiry > instant else { throw StoreError(.invalidInput, "a session must expire after it opens") }
        let table = executor.table("dashboard_sessions")
        let p = executor.dialect.parameter
        let purge = SQLStatement("DELETE FROM \(table) WHERE expires_at_ms <= \(p(1))", [.integer(instant)])
        let insert = SQLStatement(
            """
            INSERT INTO \(table) (digest, created_at_ms, expires_at_ms) VALUES (\(p(1)), \(p(2)), \(p(3)))
            ON CONFLICT (digest) DO NOTHING
            """, [.bytes(digest), .integer(instant), .integer(expiry)])
        let trim = SQLStatement(
            """
            DELETE FROM \(table) WHERE digest <> \(p(1)) AND digest NOT IN (
                SELECT digest FROM \(table) WHERE digest <> \(p(1))
                ORDER BY created_at_ms DESC, digest DESC LIMIT \(p(2)))
            """, [.bytes(digest), .integer(Int64(capacity - 1))])
        // On PostgreSQL concurrent logins are serialised: at READ COMMITTED each trim misses the others' uncommitted
        // inserts (every login commits, past the capacity), and two trims can lock rows in opposite orders (a
        // deadlock). SQLite's one writer serialises them already.
        let serialise: SQLStatement? =
            switch executor.dialect {
            case .postgres: SQLStatement("SELECT pg_advisory_xact_lock(1, hashtext(\(p(1))))", [.text(table)])
            case .sqlite: nil
            }
        _ = try await executor.transaction("opening a dashboard session", by: executor.callDeadline()) { run in
            if let serialise { _ = try await run(serialise) }
            _ = try await run(purge)
            _ = try await run(insert)
            _ = try await run(trim)
        }
    }

    /// Whether `digest` names a session live at `now`: one lookup by primary key.
    func isDashboardSessionLive(_ digest: [UInt8], now: Date) async throws(StoreError) -> Bool {
        try StoreLimits.checkSessionDigest(digest)
        let instant = try StoreTime.milliseconds(now, "now")
        let p = executor.dialect.parameter
        let rows = try await executor.query(
            "reading a dashboard session",
            SQLStatement(
                """
                SELECT digest FROM \(executor.table("dashboard_sessions"))
                WHERE digest = \(p(1)) AND expires_at_ms > \(p(2))
                """, [.bytes(digest), .integer(instant)]), access: .read)
        return !rows.isEmpty
    }

    /// Deletes the session `digest` names, in one statement; returns whether there was one.
    func closeDashboardSession(_ digest: [UInt8]) async throws(StoreError) -> Bool {
        try StoreLimits.checkSessionDigest(digest)
        let deleted = try await executor.changes(
            "closing a dashboard session",
            SQLStatement(
                "DELETE FROM \(executor.table("dashboard_sessions")) WHERE digest = \(executor.dialect.parameter(1))",
                [.bytes(digest)]))
        return deleted > 0
    }

    /// Deletes the sessions expired at `now` in one statement and returns how many.
    func deleteExpiredDashboardSessions(now: Date) async throws(StoreError) -> Int {
        let instant = try StoreTime.milliseconds(now, "now")
        return try await executor.changes(
            "deleting expired dashboard sessions",
            SQLStatement(
                """
                DELETE FROM \(executor.table("dashboard_sessions"))
                WHERE expires_at_ms <= \(executor.dialect.parameter(1))
                """, [.integer(instant)]))
    }
}
