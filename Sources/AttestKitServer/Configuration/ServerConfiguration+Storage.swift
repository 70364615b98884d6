public import AttestKitStore
import Foundation
public import Logging
import ServiceLifecycle

@available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
extension ServerConfiguration {
    /// The PostgreSQL password of `storage.password` (a secret: the environment, the secrets directory or the
    /// file) or `storage.password-file` (the path of a file holding it), from a reader scoped to `storage`; `nil`
    /// when neither is given. Any command that opens the store reads it so.
    /// - Throws: ``ServerConfigurationError`` when both are given, or for a password file that
    ///   ``storagePassword(ofFile:key:)`` refuses. Never repeats the password.
    static func storagePassword(_ storage: StrictConfigReader) throws(ServerConfigurationError) -> String? {
        let password = try storage.string("password")
        guard let path = try storage.string("password-file") else { return password }
        guard password == nil else {
            throw ServerConfigurationError(
                storage.key("password-file"), "and storage.password are both given: give the password once")
        }
        return try storagePassword(ofFile: path, key: storage.key("password-file"))
    }

    /// The largest password file read.
    static let passwordFileLimit = 4_096

    /// The password in the file at `path`: its UTF-8 text without one trailing line break (`\n` or `\r\n`), as
    /// `echo secret > file` and secret mounts write it.
    /// - Throws: ``ServerConfigurationError`` naming `key` and the path for a file that is missing, unreadable,
    ///   larger than ``passwordFileLimit``, not UTF-8, empty, or holding more than one line or a control
    ///   character. The text never appears in the error.
    static func storagePassword(ofFile path: String, key: String) throws(ServerConfigurationError) -> String {
        var text = try ServerConfigurationSource.text(ofFile: path, key: key, limit: passwordFileLimit)
        if text.hasSuffix("\r\n") {
            text.removeLast(1)  // "\r\n" is one Character
        } else if text.hasSuffix("\n") {
            text.removeLast()
        }
        guard !text.isEmpty else { throw ServerConfigurationError(key, "'\(path)' holds no password") }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw ServerConfigurationError(
                key, "'\(path)' holds more than one line or a control character: the password alone, on one line")
        }
        return text
    }

    /// The PostgreSQL settings the server opens for `url` with `password` (``storagePassword``), or `nil` for
    /// another backend.
    /// - Throws: ``ServerConfigurationError`` for a malformed URL, or a password beside a URL that is not
    ///   PostgreSQL's or carries its own.
    static func postgresConfiguration(
        url: String, password: String?
    ) throws(ServerConfigurationError) -> PostgresStoreConfiguration? {
        let parsed: StoreURL
        do {
            parsed = try StoreURL(url)
        } catch {
            throw ServerConfigurationError("storage.url", "is not a storage URL: \(error.reason)")
        }
        guard var postgres = parsed.postgres else {
            guard password == nil else {
                throw ServerConfigurationError("storage.password", "is for a PostgreSQL storage.url (postgres://)")
            }
            return nil
        }
        if let password {
            guard postgres.password == nil else {
                throw ServerConfigurationError(
                    "storage.password", "is given, and storage.url carries a password too: give the URL without it")
            }
            guard !password.isEmpty else { throw ServerConfigurationError("storage.password", "is empty") }
            postgres.password = password
        }
        return postgres
    }

    /// Logs the PostgreSQL pool a process opens, once at start-up: host, port, database, schema, `sslmode`, the
    /// certificate check, the roots and the pool size; never the password or the URL. A warning follows when the
    /// server's certificate is not checked on a host that is neither loopback nor a Unix-domain socket.
    static func announce(_ postgres: PostgresStoreConfiguration, logger: Logger) {
        logger.info(
            "PostgreSQL connection pool",
            metadata: [
                "host": "\(postgres.host)", "port": "\(postgres.port)", "database": "\(postgres.database)",
                "schema": "\(postgres.schema)", "sslmode": "\(postgres.tls)",
                "certificate_check": "\(postgres.certificateCheck)",
                "sslrootcert": "\(postgres.rootCertificates?.description ?? "unset")",
                "pool_max_conns": "\(postgres.maximumConnections)",
            ])
        // A Unix-domain socket and loopback never leave the machine.
        guard postgres.unixSocketPath == nil, !PostgresStoreConfiguration.TLSMode.isLoopback(postgres.host) else {
            return
        }
        if postgres.tls == .disable {
            logger.warning(
                """
                PostgreSQL connection not encrypted (sslmode=disable): passwords and attestation state cross the \
                network in clear text
                """)
        } else if !postgres.checksCertificate {
            logger.warning(
                """
                PostgreSQL server certificate not checked (sslmode=\(postgres.tls), libpq's meaning): an attacker on \
                the network path can impersonate the database; use sslmode=verify-full (the default), or \
                sslrootcert with a private CA
                """)
        }
    }

    /// A new, unprepared store for ``storageURL``, with ``storagePassword`` for a PostgreSQL URL that carries none
    /// (``validate()`` allows only so), creating the folder of a SQLite file when the store may migrate.
    ///
    /// Under `MigrationPolicy.verify` no folder is created: the database must exist.
    /// - Throws: `StoreError` for an unusable storage URL, or the folder's creation error.
    public func makeStore(migrations: MigrationPolicy, logger: Logger) throws -> any AttestationStore {
        if let postgres = try Self.postgresConfiguration(url: storageURL, password: storagePassword) {
            return try PostgresAttestationStore(configuration: postgres, migrations: migrations, logger: logger)
        }
        let url = try StoreURL(storageURL)
        if let path = url.sqlitePath, migrations == .apply {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
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
