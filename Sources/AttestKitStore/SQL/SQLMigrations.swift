/// The schema versioning of both SQL stores, written once: a one-row table holds the number of migrations applied
/// (`version`) and the fewest migrations a release must know to run on the schema (`compatible_from`); the missing
/// migrations are applied in order.
///
/// Each migration is applied in a transaction of its own that serialises preparers (SQLite: `BEGIN IMMEDIATE`;
/// PostgreSQL: an advisory lock), which reads the version again first, so that stores or replicas opening a database
/// together apply each migration once; the version it leaves is committed with it. A migration that cannot be
/// applied (PostgreSQL's lock timeout) therefore leaves the ones before it applied and their locks released: an
/// upgrade over several migrations never holds an earlier migration's table lock while a later one waits. The
/// migrations themselves stay per backend: their column types differ.
///
/// A schema newer than the release is accepted when its `compatible_from` is at most the number of migrations the
/// release knows: every later migration declared itself additive (``SQLMigration/keepsPreviousRelease``), so the
/// release's statements still mean what they meant. That is what lets a rolling upgrade run replicas of two
/// releases on one database, and a rollback run the previous release on the schema the new one left.
enum SQLMigrations {
    /// The migration, counted from 1, that adds the `compatible_from` column in both stores; a version left before
    /// it records no compatibility (the releases that knew fewer migrations do not read it).
    static let compatibilityColumnMigration = 5

    /// Checks the stored version and, under ``MigrationPolicy/apply``, applies the migrations after it, each in a
    /// transaction of its own.
    /// - Parameters:
    ///   - migrations: This release's migrations, oldest first; the ``compatibilityColumnMigration``th adds the
    ///     `compatible_from` column.
    ///   - table: The version table's name, qualified as the statements need it.
    ///   - creating: The `CREATE TABLE IF NOT EXISTS` statement of the version table (column `version`).
    ///   - policy: Whether to apply the missing migrations or only check.
    ///   - dialect: The dialect of the version update.
    ///   - transaction: Runs its argument in a new transaction that serialises preparers, giving it `run`, which runs
    ///     one statement in that transaction; called once to check, and once for each migration applied.
    /// - Returns: The version found and left.
    /// - Throws: ``StoreError/Code/storageUnavailable`` when this release cannot run on the stored schema (newer
    ///   and not compatible, or older under ``MigrationPolicy/verify``), or what `transaction` throws (the
    ///   migrations applied before it stay applied).
    static func apply<Row: StoreRow>(
        _ migrations: [SQLMigration], table: String, creating: String, policy: MigrationPolicy,
        dialect: SQLDialect,
        transaction: (_ step: (_ run: (SQLStatement) async throws -> [Row]) async throws -> Void) async throws -> Void
    ) async throws -> SchemaVersion {
        let known = migrations.count
        var found: Int?
        var left: SchemaVersion?
        while left == nil {
            try await transaction { run in
                let current = try await checkedVersion(
                    known: known, table: table, creating: creating, policy: policy, run: run)
                let first = found ?? current
                found = first
                guard current < known else {
                    left = SchemaVersion(found: first, current: current, known: known)
                    return
                }
                for statement in migrations[current].statements {
                    _ = try await run(SQLStatement(statement))
                }
                let applied = current + 1
                if applied >= compatibilityColumnMigration {
                    let compatible = SQLMigration.oldestCompatibleRelease(of: Array(migrations[..<applied]))
                    _ = try await run(
                        SQLStatement(
                            "UPDATE \(table) SET version = \(dialect.parameter(1)), "
                                + "compatible_from = \(dialect.parameter(2))",
                            [.integer(Int64(applied)), .integer(Int64(compatible))]))
                } else {
                    _ = try await run(
                        SQLStatement(
                            "UPDATE \(table) SET version = \(dialect.parameter(1))", [.integer(Int64(applied))]))
                }
                if applied == known { left = SchemaVersion(found: first, current: applied, known: known) }
            }
        }
        guard let left else { throw StoreError(.storageUnavailable, "the schema version was not read") }
        return left
    }

    /// The stored version, once this release can run on it: under ``MigrationPolicy/apply`` the version table is
    /// created (version 0) when missing.
    /// - Throws: ``StoreError/Code/storageUnavailable`` for a schema newer and not compatible, or (under
    ///   ``MigrationPolicy/verify``) missing or older than `known`.
    private static func checkedVersion<Row: StoreRow>(
        known: Int, table: String, creating: String, policy: MigrationPolicy,
        run: (SQLStatement) async throws -> [Row]
    ) async throws -> Int {
        let current: Int
        if policy == .apply {
            _ = try await run(SQLStatement(creating))
            if let stored = try await storedVersion(table: table, run: run) {
                current = stored
            } else {
                _ = try await run(SQLStatement("INSERT INTO \(table) (version) VALUES (0)"))
                current = 0
            }
        } else {
            // A missing version table fails the statement: both mean the schema was never created here.
            let stored = try? await storedVersion(table: table, run: run)
            guard let stored, stored > 0 else {
                throw StoreError(
                    .storageUnavailable,
                    "the database has no readable AttestKit schema and this server does not migrate: "
                        + "run `attestkit migrate`")
            }
            current = stored
        }
        if current > known {
            let compatible = try await compatibleFrom(table: table, run: run)
            guard let compatible, compatible <= known else {
                throw StoreError(
                    .storageUnavailable,
                    "the database schema is version \(current) and needs a release that knows at least "
                        + "\(compatible.map(String.init) ?? String(current)) migrations; this release knows \(known)")
            }
        }
        if current < known, policy == .verify {
            throw StoreError(
                .storageUnavailable,
                "the database schema is version \(current); this release needs \(known): run `attestkit migrate`")
        }
        return current
    }

    /// The stored version, or `nil` when the table has no row.
    private static func storedVersion<Row: StoreRow>(
        table: String, run: (SQLStatement) async throws -> [Row]
    ) async throws -> Int? {
        guard let row = try await run(SQLStatement("SELECT version FROM \(table)")).first else { return nil }
        guard let version = try row.integer("version"), let exact = Int(exactly: version), exact >= 0 else {
            throw StoreError(.storageUnavailable, "the database holds a malformed schema version")
        }
        return exact
    }

    /// The stored `compatible_from`, or `nil` when the schema does not say (a release that declared nothing).
    private static func compatibleFrom<Row: StoreRow>(
        table: String, run: (SQLStatement) async throws -> [Row]
    ) async throws -> Int? {
        guard let row = try await run(SQLStatement("SELECT compatible_from FROM \(table)")).first,
            let value = try row.integer("compatible_from")
        else { return nil }
        return Int(exactly: value)
    }
}
