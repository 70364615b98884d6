public import AttestKitStore
import Foundation
public import Logging
import ServiceLifecycle

extension ServerConfiguration {
    /// A new, unprepared store for ``storageURL``, with ``storagePassword`` for a PostgreSQL URL that carries none
    /// (``validate()`` allows only so), creating the folder of a SQLite file when the store may migrate.
    ///
    /// Under ``MigrationPolicy/verify`` no folder is created: the database must exist.
    /// - Throws: `StoreError` for an unusable storage URL, or the folder's creation error.
    public func makeStore(migrations: MigrationPolicy, logger: Logger) throws -> any AttestationStore {
        let url = try StoreURL(storageURL)
        if let path = url.sqlitePath, migrations == .apply {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        if let storagePassword, var postgres = url.postgres {
            postgres.password = storagePassword
            return try PostgresAttestationStore(configuration: postgres, migrations: migrations, logger: logger)
        }
        return try url.makeStore(migrations: migrations, logger: logger)
    }

    /// Applies the migrations this release knows to the configured database (what `attestkit migrate` runs, with
    /// the storage URL and password of a role that may change the schema), and returns the schema found and left;
    /// `nil` for `memory:`.
    /// - Throws: `StoreError` when the database cannot be reached or its schema is newer than this release and
    ///   not compatible with it.
    public func migrateStorage(logger: Logger) async throws -> SchemaVersion? {
        let store = try makeStore(migrations: .apply, logger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            do {
                try await store.prepare()
                let version = await store.schemaVersion
                await store.close()
                return version
            } catch {
                await store.close()
                throw error
            }
        }
    }
}
