import SQLiteNIO
import Synchronization

extension SQLiteConnection {
    /// The rows of `sql` with `binds`, read on the connection's thread pool and handed to the caller from there.
    ///
    /// SQLiteNIO's `query(_:_:) -> [SQLiteRow]` is written over its futures: each row is handed to an event loop
    /// as a task of its own, the statement's result waits there for all of them, and the event loop then resumes the
    /// caller. That is two thread hops per statement and one more per row, on the event loops that also serve
    /// HTTP. This runs the same statement with the same bindings on the connection's thread pool, collects its rows
    /// there and resumes the caller directly (SQLiteNIO's `query(_:_:_:) async`, which the connection's own type
    /// declares, so it is the one called here).
    func rows(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        let collected = Mutex<[SQLiteRow]>([])
        try await query(sql, binds) { row in collected.withLock { $0.append(row) } }
        return collected.withLock { $0 }
    }
}
