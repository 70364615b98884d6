import Foundation
import SQLiteNIO

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The SQLite schema and its migrations.
///
/// `schema_version` holds one row with the number of migrations applied. Migrations run in one
/// `BEGIN IMMEDIATE` transaction, so two processes opening a new file together apply them once. Tables are
/// `STRICT`: a value of the wrong type is refused by SQLite itself.
enum SQLiteSchema {
    /// Each migration is a list of single statements (the driver runs one statement per call).
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE challenges (
                id BLOB PRIMARY KEY NOT NULL CHECK (length(id) = 16),
                challenge BLOB NOT NULL CHECK (length(challenge) BETWEEN 32 AND 1024),
                purpose TEXT NOT NULL CHECK (purpose IN ('attest', 'assert')),
                key_id BLOB CHECK (key_id IS NULL OR length(key_id) = 32),
                created_at_ms INTEGER NOT NULL,
                expires_at_ms INTEGER NOT NULL,
                consumed_at_ms INTEGER
            ) STRICT
            """,
            "CREATE INDEX challenges_expires_at ON challenges (expires_at_ms)",
            """
            CREATE TABLE keys (
                key_id BLOB PRIMARY KEY NOT NULL CHECK (length(key_id) = 32),
                public_key BLOB NOT NULL CHECK (length(public_key) = 65),
                app_id TEXT NOT NULL,
                environment TEXT NOT NULL CHECK (environment IN ('production', 'development')),
                counter INTEGER NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
                receipt BLOB,
                receipt_created_at_ms INTEGER,
                receipt_refresh_at_ms INTEGER,
                risk_metric INTEGER,
                os_version TEXT,
                bundle_version TEXT,
                validation_category INTEGER,
                created_at_ms INTEGER NOT NULL,
                last_assertion_at_ms INTEGER,
                revoked_at_ms INTEGER
            ) STRICT
            """,
            """
            CREATE INDEX keys_receipt_refresh ON keys (receipt_refresh_at_ms, key_id)
                WHERE revoked_at_ms IS NULL AND receipt IS NOT NULL
            """,
            """
            CREATE TABLE risk_metrics (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                key_id BLOB NOT NULL REFERENCES keys (key_id) ON DELETE CASCADE,
                risk_metric INTEGER NOT NULL,
                receipt_created_at_ms INTEGER NOT NULL,
                recorded_at_ms INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX risk_metrics_key ON risk_metrics (key_id, seq)",
        ],
        [
            """
            CREATE TABLE rate_budgets (
                name TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 256),
                tokens INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT
            """
        ],
        [
            """
            CREATE TABLE consumed_tokens (
                token_id TEXT PRIMARY KEY NOT NULL CHECK (length(token_id) BETWEEN 1 AND 128),
                expires_at_ms INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX consumed_tokens_expiry ON consumed_tokens (expires_at_ms)",
        ],
        // 4: the app key a key attestation bound to the key (SubjectPublicKeyInfo DER).
        ["ALTER TABLE keys ADD COLUMN app_key BLOB CHECK (app_key IS NULL OR length(app_key) BETWEEN 1 AND 1024)"],
        // 5: dashboard sessions (additive: a new table)
        [
            """
            CREATE TABLE dashboard_sessions (
                digest BLOB PRIMARY KEY NOT NULL CHECK (length(digest) = 32),
                created_at_ms INTEGER NOT NULL,
                expires_at_ms INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at_ms)",
        ],
    ]

    /// Creates the database's directory and an empty file readable by its owner only, when absent.
    ///
    /// `O_CREAT | O_EXCL` makes the creation atomic: of two processes opening a new path together, one
    /// creates the file and neither replaces the other's.
    static func createFile(at path: String) throws {
        let url = URL(fileURLWithPath: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if descriptor >= 0 {
            close(descriptor)
        } else if errno != EEXIST {
            throw StoreError(.storageUnavailable, "the SQLite database file could not be created (errno \(errno))")
        }
    }

    /// Applies the missing migrations in one immediate transaction (``SQLMigrations``).
    /// - Throws: ``StoreError/Code/storageUnavailable`` when the file's schema is newer than this release.
    static func migrate(_ connection: SQLiteConnection) async throws {
        try await SQLiteExecutor.transaction(on: connection) {
            try await SQLMigrations.apply(
                migrations, table: "schema_version",
                creating: "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT",
                dialect: .sqlite
            ) { statement in try await SQLiteExecutor.run(statement, on: connection) }
        }
    }
}
