import Logging
import PostgresNIO

/// The PostgreSQL schema and its migrations, inside a dedicated schema (by default `attestkit`).
///
/// Migrations run in one transaction that first takes a transaction-scoped advisory lock derived from the
/// schema name, so replicas starting together apply them once, one after the other; the lock is released
/// at commit or rollback.
struct PostgresSchema: Sendable {
    /// The schema name, already checked to be a plain lower-case identifier.
    let name: String

    /// `"name"`, for qualifying table names.
    var quoted: String { "\"\(name)\"" }

    /// A table name qualified with the schema.
    func table(_ table: String) -> String { "\(quoted).\(table)" }

    /// The advisory lock key of this schema's migrations: FNV-1a of `attestkit.migrations.NAME`.
    var lockKey: Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "attestkit.migrations.\(name)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    /// Each migration is a list of single statements.
    var migrations: [[String]] {
        [
            [
                """
                CREATE TABLE \(table("challenges")) (
                    id BYTEA PRIMARY KEY CHECK (octet_length(id) = 16),
                    challenge BYTEA NOT NULL CHECK (octet_length(challenge) BETWEEN 32 AND 1024),
                    purpose TEXT NOT NULL CHECK (purpose IN ('attest', 'assert')),
                    key_id BYTEA CHECK (key_id IS NULL OR octet_length(key_id) = 32),
                    created_at_ms BIGINT NOT NULL,
                    expires_at_ms BIGINT NOT NULL,
                    consumed_at_ms BIGINT
                )
                """,
                "CREATE INDEX challenges_expires_at ON \(table("challenges")) (expires_at_ms)",
                """
                CREATE TABLE \(table("keys")) (
                    key_id BYTEA PRIMARY KEY CHECK (octet_length(key_id) = 32),
                    public_key BYTEA NOT NULL CHECK (octet_length(public_key) = 65),
                    app_id TEXT NOT NULL,
                    environment TEXT NOT NULL CHECK (environment IN ('production', 'development')),
                    counter BIGINT NOT NULL CHECK (counter BETWEEN 0 AND 4294967295),
                    receipt BYTEA,
                    receipt_created_at_ms BIGINT,
                    receipt_refresh_at_ms BIGINT,
                    risk_metric BIGINT,
                    os_version TEXT,
                    bundle_version TEXT,
                    validation_category BIGINT,
                    created_at_ms BIGINT NOT NULL,
                    last_assertion_at_ms BIGINT,
                    revoked_at_ms BIGINT
                )
                """,
                """
                CREATE INDEX keys_receipt_refresh ON \(table("keys")) (receipt_refresh_at_ms, key_id)
                    WHERE revoked_at_ms IS NULL AND receipt IS NOT NULL
                """,
                """
                CREATE TABLE \(table("risk_metrics")) (
                    seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    key_id BYTEA NOT NULL REFERENCES \(table("keys")) (key_id) ON DELETE CASCADE,
                    risk_metric BIGINT NOT NULL,
                    receipt_created_at_ms BIGINT NOT NULL,
                    recorded_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX risk_metrics_key ON \(table("risk_metrics")) (key_id, seq)",
            ],
            [
                """
                CREATE TABLE \(table("rate_budgets")) (
                    name TEXT PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 256),
                    tokens BIGINT NOT NULL,
                    updated_at_ms BIGINT NOT NULL
                )
                """
            ],
        ]
    }

    /// Creates the schema if needed and applies the missing migrations, under the advisory lock.
    /// - Throws: ``StoreError/Code/storageUnavailable`` when the schema is newer than this release.
    func migrate(_ client: PostgresClient, logger: Logger) async throws {
        let migrations = self.migrations
        try await client.withTransaction(logger: logger) { connection in
            try await PostgresStatement.run(
                connection,
                PostgresStatement.query(SQLStatement("SELECT pg_advisory_xact_lock($1)", [.integer(lockKey)])),
                logger: logger)
            try await PostgresStatement.run(
                connection, PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(quoted)"), logger: logger)
            try await PostgresStatement.run(
                connection,
                PostgresQuery(
                    unsafeSQL: "CREATE TABLE IF NOT EXISTS \(table("schema_version")) (version BIGINT NOT NULL)"),
                logger: logger)
            let rows = try await PostgresStatement.run(
                connection,
                PostgresQuery(unsafeSQL: "SELECT version FROM \(table("schema_version"))"), logger: logger)
            let current: Int
            if let row = rows.first, let version = try PostgresStoreRow(row).integer("version") {
                current = Int(version)
            } else {
                try await PostgresStatement.run(
                    connection,
                    PostgresQuery(unsafeSQL: "INSERT INTO \(table("schema_version")) (version) VALUES (0)"),
                    logger: logger)
                current = 0
            }
            guard current <= migrations.count else {
                throw StoreError(
                    .storageUnavailable,
                    "the database schema is version \(current); this release knows \(migrations.count)")
            }
            for migration in migrations.dropFirst(current) {
                for statement in migration {
                    try await PostgresStatement.run(connection, PostgresQuery(unsafeSQL: statement), logger: logger)
                }
            }
            if current < migrations.count {
                let update = SQLStatement(
                    "UPDATE \(table("schema_version")) SET version = $1", [.integer(Int64(migrations.count))])
                try await PostgresStatement.run(connection, PostgresStatement.query(update), logger: logger)
            }
        }
    }
}
