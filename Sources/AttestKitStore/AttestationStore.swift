public import Foundation
public import Logging
public import ServiceLifecycle

/// Durable, race-free App Attest state: one-time challenges, registered keys, their counters, receipts and
/// risk-metric history.
///
/// Three backends implement it with the same semantics and pass the same test suite:
/// ``MemoryAttestationStore`` (tests, one process), ``SQLiteAttestationStore`` (the embedded default) and
/// ``PostgresAttestationStore`` (several replicas sharing one database). ``StoreURL`` picks one from a URL.
///
/// Every operation that decides something (consume a challenge, register a key, advance a counter) is one
/// atomic statement or transaction in the database: of many concurrent identical requests, in one process
/// or across replicas, exactly one wins. Arguments are checked before they reach SQL, every statement is
/// parameterised, and failures are ``StoreError``s with stable codes.
///
/// It is the composition of small protocols, one per kind of record: ``ChallengeStore``, ``KeyStore``,
/// ``RateBudgetStore``, ``ConsumedTokenStore``, ``DashboardSessionStore`` and ``JobLeaseStore``, plus the lifecycle
/// (`Service`, ``prepare()``, ``close()``). A part that needs one kind of record takes only its protocol; a new backend
/// implements each protocol for what it stores (the SQL backends get every operation from one shared implementation
/// and keep only their driver).
///
/// A store is a `Service`: run it in a `ServiceGroup` (or use ``StoreURL/withStore(logger:_:)``), call
/// ``prepare()`` once it runs, and it closes its connections when the group shuts down. Times are
/// parameters (`now`), stored to the millisecond.
public protocol AttestationStore: ChallengeStore, KeyStore, RateBudgetStore, ConsumedTokenStore, DashboardSessionStore,
    JobLeaseStore,
    Service
{
    /// Opens the database and brings its schema up to date; idempotent, and safe to call from several
    /// replicas at once. Other methods call it on first use where the backend allows.
    /// - Throws: ``StoreError/Code/storageUnavailable`` when the database cannot be reached or its schema is
    ///   newer than this release.
    func prepare() async throws(StoreError)

    /// Checks that the store answers, at a constant cost whatever it holds (what `/ready` asks on every probe): one
    /// round trip, `SELECT 1`, for the SQL stores (bounded by PostgreSQL's operation deadline); for the memory store,
    /// only that it is open.
    /// - Throws: ``StoreError/Code/storageUnavailable`` when the database cannot be reached or does not answer in
    ///   time, or the store is closed.
    func ping() async throws(StoreError)

    /// Reads the database's own clock in the one round trip of ``ping()``, which it stands for: what replicas sharing
    /// the store compare their clocks with, since the times one of them writes (an expiry, a lease's end, a budget's
    /// refill) are compared by the others with theirs. PostgreSQL's `clock_timestamp()`, to the millisecond.
    /// - Returns: The database's time; `nil` for a store whose clock is this process's (the memory store, SQLite),
    ///   which only pings. No default: a store that wraps another must forward it, or the replicas' clocks are no
    ///   longer checked behind it.
    /// - Throws: As ``ping()``.
    func databaseTime() async throws(StoreError) -> Date?

    /// Closes the store's connections. Further calls fail with ``StoreError/Code/storageUnavailable``.
    func close() async

    /// The schema ``prepare()`` found and left (``MigrationPolicy``); `nil` before it succeeded, and for a store
    /// without a schema.
    var schemaVersion: SchemaVersion? { get async }
}

extension AttestationStore {
    /// `nil`: a store without a versioned schema.
    public var schemaVersion: SchemaVersion? {
        get async { nil }
    }
}

/// Loggers for stores. Stores are silent by default and never log keys, receipts or challenges.
public enum StoreLogging {
    /// A logger that drops everything: the default of every store.
    public static let silent = Logger(label: "attestkit.store", factory: { _ in SwiftLogNoOpLogHandler() })
}
