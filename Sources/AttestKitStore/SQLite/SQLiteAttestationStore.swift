import AttestKit
import Foundation
public import Logging
import SQLiteNIO
import ServiceLifecycle

/// An ``AttestationStore`` in one SQLite file: the embedded default, with nothing to install.
///
/// The file and its directory are created on first use (mode 0600). The database runs in WAL mode with
/// `synchronous=FULL`, so an operation that returned is on disk even if the process is killed the next
/// instant; `busy_timeout` bounds the wait for another process's write lock. The schema is versioned and
/// migrated on first use.
///
/// Writes go through one connection, reads through a few more. Concurrent single-statement writes are committed
/// together (group commit: one transaction and one `fsync` per batch), each caller answered once its batch is on
/// disk; each decision is one statement
/// (`UPDATE … RETURNING`, `INSERT … ON CONFLICT DO NOTHING`) or one `BEGIN IMMEDIATE` transaction. Several
/// processes may open the same file: SQLite's locks serialise their writes.
///
/// Its operations are the SQL shared with the other SQL store, written once; this type holds only its driver.
public final class SQLiteAttestationStore: AttestationStore, SQLBackedStore {
    /// Settings of an SQLite store.
    public struct Configuration: Sendable {
        /// The database file. Relative paths are resolved against the working directory.
        public var path: String
        /// How many read-only connections to open at most, besides the writer; 0 sends reads to the writer.
        public var readerCount: Int
        /// How long a statement waits for another process's write lock before failing.
        public var busyTimeout: Duration

        /// Creates a configuration.
        public init(path: String, readerCount: Int = 2, busyTimeout: Duration = .seconds(10)) {
            self.path = path
            self.readerCount = readerCount
            self.busyTimeout = busyTimeout
        }
    }

    /// The configuration the store was created with.
    public let configuration: Configuration
    private let pool: SQLiteConnectionPool
    /// The shared SQL of every operation, over this store's executor (tests reach its group commit).
    let sql: SQLStore<SQLiteExecutor>

    /// Creates a store; nothing is opened until ``prepare()`` or the first operation.
    /// - Parameters:
    ///   - configuration: The file and the connections.
    ///   - migrations: Whether preparing applies the missing migrations or only checks the schema.
    ///   - logger: Where the store logs (never a key, a receipt or a challenge).
    public init(
        configuration: Configuration, migrations: MigrationPolicy = .apply, logger: Logger = StoreLogging.silent
    ) {
        self.configuration = configuration
        let milliseconds =
            max(0, min(configuration.busyTimeout.components.seconds, 3_600)) * 1000
            + configuration.busyTimeout.components.attoseconds / 1_000_000_000_000_000
        self.pool = SQLiteConnectionPool(
            path: configuration.path,
            readerCount: max(0, min(configuration.readerCount, 16)),
            busyTimeoutMilliseconds: Int(max(0, min(milliseconds, 3_600_000))),
            migrations: migrations, logger: logger)
        self.sql = SQLStore(executor: SQLiteExecutor(pool: pool))
    }

    /// Creates a store at `path` with default settings.
    public convenience init(path: String, logger: Logger = StoreLogging.silent) {
        self.init(configuration: Configuration(path: path), logger: logger)
    }

    /// Waits until the service group shuts down or the task is cancelled, then closes the connections.
    public func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    /// Creates the file and its directory if needed, switches to WAL and migrates the schema (or, under
    /// ``MigrationPolicy/verify``, checks that this release can run on it).
    public func prepare() async throws(StoreError) {
        try await StoreError.wrapping("opening the SQLite database", detail: SQLiteExecutor.detail) {
            try await pool.prepare()
        }
    }

    /// The schema the store found and left, once prepared.
    public var schemaVersion: SchemaVersion? {
        get async { await pool.schemaVersion }
    }

    /// Applies the writes already accepted (and answers their callers), then closes idle connections now and leased
    /// ones when they return; later calls fail.
    public func close() async {
        await executor.commits.close()
        await pool.close()
    }

    // MARK: Testing

    /// Runs one statement on the writer connection and returns the first column of its first row as an integer,
    /// for tests that put the database into the state of a failing disk: `PRAGMA query_only = ON` (writes fail as on
    /// a read-only file), `PRAGMA max_page_count = 1` (the file cannot grow, as on a full disk).
    package func executeOnWriter(_ sql: String) async throws(StoreError) -> Int? {
        try await executor.lease(.writer, "a test statement") { connection in
            try await connection.query(sql).first?.columns.first?.data.integer
        }
    }
}
