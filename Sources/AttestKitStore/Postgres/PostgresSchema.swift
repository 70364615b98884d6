import Logging
import PostgresNIO

/// The PostgreSQL schema and its migrations, inside a dedicated schema (by default `attestkit`).
///
/// Each migration runs in a transaction of its own that first takes a transaction-scoped advisory lock derived
/// from the schema name, so replicas starting together apply each once, one after the other; the lock is released
/// at commit or rollback.
///
/// Within it, a statement waits at most ``lockTimeout`` for a table lock: an `ALTER TABLE` queued behind a long
/// transaction of a running replica would otherwise hold up every later reader of that table (PostgreSQL queues
/// them behind it), stalling the request path of the whole fleet. Past it, that migration rolls back whole and
/// `prepare()` fails naming the wait; the migrations before it stay applied, their locks released at their own
/// commits, so no table an earlier one altered stays locked meanwhile. Starting again once the long transaction
/// ended applies the rest.
struct PostgresSchema: Sendable {
    /// How long a migration statement waits for a table lock.
    static let lockTimeout = "5s"

    /// PostgreSQL's `lock_not_available` (a `lock_timeout` passed).
    static let lockNotAvailable = "55P03"

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

    /// The migrations, oldest first; each declares whether the release before it runs on the schema it leaves.
    var migrations: [SQLMigration] {
        [
            // 1: the tables (every release after it relies on them).
            .breaking(
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
                "CREATE INDEX risk_metrics_key ON \(table("risk_metrics")) (key_id, seq)"
            ),
            // 2: shared rate budgets (additive: a new table).
            .additive(
                """
                CREATE TABLE \(table("rate_budgets")) (
                    name TEXT PRIMARY KEY CHECK (octet_length(name) BETWEEN 1 AND 256),
                    tokens BIGINT NOT NULL,
                    updated_at_ms BIGINT NOT NULL
                )
                """
            ),
            // 3: consumed tokens (additive: a new table).
            .additive(
                """
                CREATE TABLE \(table("consumed_tokens")) (
                    token_id TEXT PRIMARY KEY CHECK (octet_length(token_id) BETWEEN 1 AND 128),
                    expires_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX consumed_tokens_expiry ON \(table("consumed_tokens")) (expires_at_ms)"
            ),
            // 4: the app key a key attestation bound to the key, SubjectPublicKeyInfo DER (additive: a nullable
            // column).
            .additive(
                """
                ALTER TABLE \(table("keys")) ADD COLUMN app_key BYTEA
                    CHECK (app_key IS NULL OR octet_length(app_key) BETWEEN 1 AND 1024)
                """
            ),
            // 5: the schema's compatibility, leases on background jobs shared by replicas, and key counts kept by
            // triggers (additive: a nullable column, new tables, triggers that only write the new table).
            .additive(
                "ALTER TABLE \(table("schema_version")) ADD COLUMN compatible_from BIGINT",
                """
                CREATE TABLE \(table("job_leases")) (
                    job TEXT PRIMARY KEY CHECK (octet_length(job) BETWEEN 1 AND 64),
                    holder TEXT NOT NULL CHECK (octet_length(holder) BETWEEN 1 AND 128),
                    expires_at_ms BIGINT NOT NULL
                )
                """,
                """
                CREATE TABLE \(table("key_counts")) (
                    environment TEXT NOT NULL CHECK (environment IN ('production', 'development')),
                    state TEXT NOT NULL CHECK (state IN ('active', 'revoked')),
                    count BIGINT NOT NULL,
                    PRIMARY KEY (environment, state)
                )
                """,
                // Every bucket has a row from the start, so the triggers only ever update one. Counted with the
                // keys locked against writes until the trigger exists (the commit): a key that the previous release
                // registers meanwhile waits, and is counted by the trigger, instead of being missed by both.
                "LOCK TABLE \(table("keys")) IN SHARE ROW EXCLUSIVE MODE",
                """
                INSERT INTO \(table("key_counts")) (environment, state, count)
                SELECT e.environment, s.state, (
                    SELECT count(*) FROM \(table("keys")) k WHERE k.environment = e.environment
                        AND (CASE WHEN k.revoked_at_ms IS NULL THEN 'active' ELSE 'revoked' END) = s.state)
                FROM (VALUES ('production'), ('development')) AS e (environment),
                    (VALUES ('active'), ('revoked')) AS s (state)
                """,
                """
                CREATE FUNCTION \(quoted).count_keys() RETURNS trigger LANGUAGE plpgsql AS $body$
                BEGIN
                    IF TG_OP IN ('UPDATE', 'DELETE') THEN
                        UPDATE \(table("key_counts")) SET count = count - 1
                        WHERE environment = OLD.environment
                            AND state = CASE WHEN OLD.revoked_at_ms IS NULL THEN 'active' ELSE 'revoked' END;
                    END IF;
                    IF TG_OP IN ('INSERT', 'UPDATE') THEN
                        UPDATE \(table("key_counts")) SET count = count + 1
                        WHERE environment = NEW.environment
                            AND state = CASE WHEN NEW.revoked_at_ms IS NULL THEN 'active' ELSE 'revoked' END;
                    END IF;
                    RETURN NULL;
                END
                $body$
                """,
                """
                CREATE TRIGGER keys_count AFTER INSERT OR DELETE OR UPDATE OF revoked_at_ms ON \(table("keys"))
                    FOR EACH ROW EXECUTE FUNCTION \(quoted).count_keys()
                """
            ),
            // 6: dashboard sessions shared by replicas (additive: a new table).
            .additive(
                """
                CREATE TABLE \(table("dashboard_sessions")) (
                    digest BYTEA PRIMARY KEY CHECK (octet_length(digest) = 32),
                    created_at_ms BIGINT NOT NULL,
                    expires_at_ms BIGINT NOT NULL
                )
                """,
                "CREATE INDEX dashboard_sessions_expiry ON \(table("dashboard_sessions")) (expires_at_ms)"
            ),
            // 7: when a key's receipt expires, so the receipt refresh skips expired receipts (additive: a nullable
            // column; the release before it neither reads nor writes it).
            .additive("ALTER TABLE \(table("keys")) ADD COLUMN receipt_expires_at_ms BIGINT"),
            // 8: room on each page of `keys` for its rows' next versions (fillfactor 85), so that a counter advance
            // writes its new row version on the same page and no index entry (a HOT update), however full the
            // table was loaded (additive: a storage parameter, taken under a lock that lets reads and writes go on;
            // it shapes pages written from now on, and a table rewrite applies it to the others).
            .additive("ALTER TABLE \(table("keys")) SET (fillfactor = 85)"),
            // 9: the key access control its credential certificate carried (additive: a nullable column; the
            // release before it neither reads nor writes it, and keys registered before it keep NULL).
            .additive("ALTER TABLE \(table("keys")) ADD COLUMN key_access_control BYTEA"),
            // 10: the app an attest challenge was issued for (additive: a nullable column without a default, so no
            // rewrite; the release before it neither reads nor writes it, and its challenges, bound to no app, are
            // checked as before). Its CHECK is added NOT VALID: every existing row holds NULL, which passes, and a
            // CHECK added with the column would scan the whole table under the ACCESS EXCLUSIVE lock, stalling
            // every replica's challenges for as long; new and updated rows are checked all the same.
            .additive(
                "ALTER TABLE \(table("challenges")) ADD COLUMN rp_id_hash BYTEA",
                """
                ALTER TABLE \(table("challenges")) ADD CONSTRAINT challenges_rp_id_hash_check
                    CHECK (rp_id_hash IS NULL OR length(rp_id_hash) = 32) NOT VALID
                """),
        ]
    }

    /// Under ``MigrationPolicy/apply``: creates the schema if needed and applies the missing migrations
    /// (``SQLMigrations``), each in a transaction of its own under the advisory lock. Under
    /// ``MigrationPolicy/verify``: only checks that this release can run on the schema.
    /// - Throws: ``StoreError/Code/storageUnavailable`` when this release cannot run on the schema.
    func migrate(_ client: PostgresClient, policy: MigrationPolicy, logger: Logger) async throws -> SchemaVersion {
        let (migrations, lockKey, quoted, versions) = (migrations, lockKey, quoted, table("schema_version"))
        do {
            return try await transactions(client, migrations, lockKey, quoted, versions, policy, logger)
        } catch let error as PostgresTransactionError {
            // The refusal of a schema (a StoreError) keeps its reason; a driver failure stays a driver failure.
            if let refusal = error.closureError as? StoreError { throw refusal }
            if let failure = error.closureError as? PSQLError,
                failure.serverInfo?[.sqlState] == Self.lockNotAvailable
            {
                throw StoreError(
                    .storageUnavailable,
                    "a migration waited \(Self.lockTimeout) for a table that another transaction holds (a long "
                        + "query, or a session idle in a transaction); it was rolled back, those before it stay applied: "
                        + "start again once it ends")
            }
            throw error
        }
    }

    /// ``SQLMigrations/apply(_:table:creating:policy:dialect:transaction:)`` with its transactions on `client`, each
    /// under the advisory lock and the lock timeout.
    private func transactions(
        _ client: PostgresClient, _ migrations: [SQLMigration], _ lockKey: Int64, _ quoted: String, _ versions: String,
        _ policy: MigrationPolicy, _ logger: Logger
    ) async throws -> SchemaVersion {
        try await SQLMigrations.apply(
            migrations, table: versions,
            creating: "CREATE TABLE IF NOT EXISTS \(versions) (version BIGINT NOT NULL)", policy: policy,
            dialect: .postgres
        ) { step in
            try await client.withTransaction(logger: logger) { connection in
                let run = { (statement: SQLStatement) in
                    try await PostgresExecutor.run(statement, on: connection, logger: logger)
                }
                if policy == .apply {
                    _ = try await run(SQLStatement("SELECT pg_advisory_xact_lock($1)", [.integer(lockKey)]))
                    // After the advisory lock: a replica waiting for another's migrations waits as long as they take.
                    _ = try await run(SQLStatement("SET LOCAL lock_timeout = '\(Self.lockTimeout)'"))
                    _ = try await run(SQLStatement("CREATE SCHEMA IF NOT EXISTS \(quoted)"))
                }
                try await step(run)
            }
        }
    }
}
