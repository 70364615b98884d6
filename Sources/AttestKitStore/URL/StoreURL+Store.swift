public import Logging
import ServiceLifecycle

extension StoreURL {
    /// A new, unprepared store for this URL.
    ///
    /// Run it as a `Service` (in the server's `ServiceGroup`), then call ``AttestationStore/prepare()``.
    /// - Parameters:
    ///   - migrations: Whether preparing a SQL store applies the missing migrations or only checks the schema
    ///     (the memory store has no schema).
    ///   - logger: Where the store logs.
    /// - Throws: ``StoreError/Code/invalidInput`` when the PostgreSQL settings are malformed, or the `sslrootcert`
    ///   file cannot be read or holds no certificate.
    public func makeStore(
        migrations: MigrationPolicy = .apply, logger: Logger = StoreLogging.silent
    ) throws(StoreError) -> any AttestationStore {
        if backend == .sqlite, let sqlitePath {
            return SQLiteAttestationStore(
                configuration: .init(path: sqlitePath), migrations: migrations, logger: logger)
        }
        if backend == .postgres, let postgres {
            return try PostgresAttestationStore(configuration: postgres, migrations: migrations, logger: logger)
        }
        return MemoryAttestationStore()
    }

    /// Runs `body` with a running, prepared store for this URL, and closes it after.
    ///
    /// For command-line tools and tests; a server runs the store in its `ServiceGroup` instead.
    /// ```swift
    /// try await StoreURL("sqlite:attestkit-data/store.sqlite").withStore { store in
    ///     let challenge = try await store.issueChallenge(purpose: .attest, now: Date())
    /// }
    /// ```
    /// - Throws: ``StoreError`` from preparing the store, or what `body` throws.
    public func withStore<Result: Sendable>(
        logger: Logger = StoreLogging.silent,
        _ body: (any AttestationStore) async throws -> Result
    ) async throws -> Result {
        let store = try makeStore(logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            do {
                try await store.prepare()
                let result = try await body(store)
                await store.close()
                group.cancelAll()
                return result
            } catch {
                await store.close()
                group.cancelAll()
                throw error
            }
        }
    }
}
