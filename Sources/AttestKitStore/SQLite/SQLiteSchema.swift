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
    /// The migrations, oldest first; each declares whether the release before it runs on the schema it leaves.
    static let migrations: [SQLMigration] = [
        // 1: the tables (every release after it relies on them).
        .breaking(
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
            "CREATE INDEX risk_metrics_key ON risk_metrics (key_id, seq)"
        ),
        // 2: shared rate budgets (additive: a new table).
        .additive(
            """
            CREATE TABLE rate_budgets (
                name TEXT PRIMARY KEY NOT NULL CHECK (length(name) BETWEEN 1 AND 256),
                tokens INTEGER NOT NULL,
                updated_at_ms INTEGER NOT NULL
            ) STRICT
            """
        ),
        // 3: consumed tokens (additive: a new table).
        .additive(
            """
            CREATE TABLE consumed_tokens (
                token_id TEXT PRIMARY KEY NOT NULL CHECK (length(token_id) BETWEEN 1 AND 128),
                expires_at_ms INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX consumed_tokens_expiry ON consumed_tokens (expires_at_ms)"
        ),
        // 4: the app key a key attestation bound to the key, SubjectPublicKeyInfo DER (additive: a nullable column).
        .additive(
            "ALTER TABLE keys ADD COLUMN app_key BLOB CHECK (app_key IS NULL OR length(app_key) BETWEEN 1 AND 1024)"),
        // 5: the schema's compatibility, leases on background jobs shared by processes, and key counts kept by
        // triggers (additive: a nullable column, new tables, triggers that only write the new table).
        .additive(
            "ALTER TABLE schema_version ADD COLUMN compatible_from INTEGER",
            """
            CREATE TABLE job_leases (
                job TEXT PRIMARY KEY NOT NULL CHECK (length(job) BETWEEN 1 AND 64),
                holder TEXT NOT NULL CHECK (length(holder) BETWEEN 1 AND 128),
                expires_at_ms INTEGER NOT NULL
            ) STRICT
            """,
            """
            CREATE TABLE key_counts (
                environment TEXT NOT NULL CHECK (environment IN ('production', 'development')),
                state TEXT NOT NULL CHECK (state IN ('active', 'revoked')),
                count INTEGER NOT NULL,
                PRIMARY KEY (environment, state)
            ) STRICT
            """,
            // Every bucket has a row from the start, so the triggers only ever update one.
            """
            INSERT INTO key_counts (environment, state, count)
            SELECT e.environment, s.state, (
                SELECT count(*) FROM keys k WHERE k.environment = e.environment
                    AND (CASE WHEN k.revoked_at_ms IS NULL THEN 'active' ELSE 'revoked' END) = s.state)
            FROM (SELECT 'production' AS environment UNION ALL SELECT 'development') AS e,
                (SELECT 'active' AS state UNION ALL SELECT 'revoked') AS s
            """,
            """
            CREATE TRIGGER keys_count_insert AFTER INSERT ON keys BEGIN
                UPDATE key_counts SET count = count + 1 WHERE environment = NEW.environment
                    AND state = CASE WHEN NEW.revoked_at_ms IS NULL THEN 'active' ELSE 'revoked' END;
            END
            """,
            """
            CREATE TRIGGER keys_count_delete AFTER DELETE ON keys BEGIN
                UPDATE key_counts SET count = count - 1 WHERE environment = OLD.environment
                    AND state = CASE WHEN OLD.revoked_at_ms IS NULL THEN 'active' ELSE 'revoked' END;
            END
            """,
            """
            CREATE TRIGGER keys_count_revoke AFTER UPDATE OF revoked_at_ms ON keys BEGIN
                UPDATE key_counts SET count = count - 1 WHERE environment = OLD.environment
                    AND state = CASE WHEN OLD.revoked_at_ms IS NULL THEN 'active' ELSE 'revoked' END;
                UPDATE key_counts SET count = count + 1 WHERE environment = NEW.environment
                    AND state = CASE WHEN NEW.revoked_at_ms IS NULL THEN 'active' ELSE 'revoked' END;
            END
            """
        ),
        // 6: dashboard sessions shared by processes (additive: a new table).
        .additive(
            """
            CREATE TABLE dashboard_sessions (
                digest BLOB PRIMARY KEY NOT NULL CHECK (length(digest) = 32),
                created_at_ms INTEGER NOT NULL,
                expires_at_ms INTEGER NOT NULL
            ) STRICT
            """,
            "CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at_ms)"
        ),
        // 7: when a key's receipt expires, so the receipt refresh skips expired receipts (additive: a nullable column;
        // the release before it neither reads nor writes it).
        .additive("ALTER TABLE keys ADD COLUMN receipt_expires_at_ms INTEGER"),
        // 8: PostgreSQL leaves room on the pages of `keys` for counter advances (fillfactor); SQLite has no such
        // setting, and its write-ahead log writes each changed page whole anyway. Nothing to do: the number keeps
        // both backends' versions in step.
        .additive(),
        // 9: the key access control its credential certificate carried (additive: a nullable column; the release
        // before it neither reads nor writes it, and keys registered before it keep NULL).
        .additive("ALTER TABLE keys ADD COLUMN key_access_control BLOB"),
        // 10: the app an attest challenge was issued for (additive: a nullable column; the release before it neither
        // reads nor writes it, and its challenges, bound to no app, are checked as before).
        .additive(
            """
            ALTER TABLE challenges ADD COLUMN rp_id_hash BLOB
                CHECK (rp_id_hash IS NULL OR length(rp_id_hash) = 32)
            """),
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

    /// Applies the missing migrations, each in an immediate transaction of its own (``SQLMigrations``), or under
    /// ``MigrationPolicy/verify`` only checks that this release can run on the file's schema.
    /// - Throws: ``StoreError/Code/storageUnavailable`` when this release cannot run on the file's schema.
    static func migrate(_ connection: SQLiteConnection, policy: MigrationPolicy) async throws -> SchemaVersion {
        try await SQLMigrations.apply(
            migrations, table: "schema_version",
            creating: "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL) STRICT",
            policy: policy, dialect: .sqlite
        ) { step in
            try await SQLiteExecutor.transaction(on: connection) {
                try await step { statement in try await SQLiteExecutor.run(statement, on: connection) }
            }
        }
    }
}
