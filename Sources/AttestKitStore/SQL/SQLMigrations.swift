/// The schema versioning of both SQL stores, written once: a one-row table holds the number of migrations applied,
/// and the missing ones are applied in order.
///
/// The caller runs it inside one transaction that serialises preparers (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: an
/// advisory lock), so that stores or replicas opening a new database together apply each migration once. The
/// migrations themselves stay per backend: their column types differ.
enum SQLMigrations {
    /// Creates the version table if needed and applies the migrations after the stored version.
    /// - Parameters:
    ///   - migrations: Each migration as a list of single statements, oldest first.
    ///   - table: The version table's name, qualified as the statements need it.
    ///   - creating: The `CREATE TABLE IF NOT EXISTS` statement of the version table (column `version`).
    ///   - dialect: The dialect of the version update.
    ///   - run: Runs one statement in the caller's transaction.
    /// - Throws: ``StoreError/Code/storageUnavailable`` when the stored version is newer than this release, or
    ///   what `run` throws.
    static func apply<Row: StoreRow>(
        _ migrations: [[String]], table: String, creating: String, dialect: SQLDialect,
        run: (SQLStatement) async throws -> [Row]
    ) async throws {
        _ = try await run(SQLStatement(creating))
        let current: Int
        if let row = try await run(SQLStatement("SELECT version FROM \(table)")).first,
            let version = try row.integer("version")
        {
            guard let exact = Int(exactly: version) else {
                throw StoreError(.storageUnavailable, "the database holds a malformed schema version")
            }
            current = exact
        } else {
            _ = try await run(SQLStatement("INSERT INTO \(table) (version) VALUES (0)"))
            current = 0
        }
        guard current <= migrations.count else {
            throw StoreError(
                .storageUnavailable,
                "the database schema is version \(current); this release knows \(migrations.count)")
        }
        for statement in migrations.dropFirst(current).joined() {
            _ = try await run(SQLStatement(statement))
        }
        if current < migrations.count {
            _ = try await run(
                SQLStatement(
                    "UPDATE \(table) SET version = \(dialect.parameter(1))", [.integer(Int64(migrations.count))]))
        }
    }
}
