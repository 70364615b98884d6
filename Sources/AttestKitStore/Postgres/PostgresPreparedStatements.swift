import PostgresNIO

/// The request path's statements as PostgresNIO prepares them: each is parsed and planned once per pooled
/// connection, under its name, then only bound and executed (``SQLPreparedStatement``).
///
/// Their texts name the key table without its schema: the pool's connections start with the store's schema as
/// their `search_path` (``PostgresAttestationStore``), so that one text, known before any store exists, serves every
/// schema. Every other statement qualifies its tables.
enum PostgresPreparedStatements {
    /// The combined counter advance.
    enum AdvanceCounters: PostgresPreparedKind {
        static let statement = SQLPreparedStatement.advanceCounters
        static let name = statement.name
        static let sql = statement.postgresText(keys: "keys")
    }

    /// The combined key read.
    enum ReadKeys: PostgresPreparedKind {
        static let statement = SQLPreparedStatement.readKeys
        static let name = statement.name
        static let sql = statement.postgresText(keys: "keys")
    }

    /// Runs `statement`'s prepared form with its binds on `connection` and reads all its rows.
    static func run(
        _ statement: SQLPreparedStatement, _ bindings: PostgresBindings, on connection: PostgresConnection,
        logger: Logger
    ) async throws -> [PostgresStoreRow] {
        switch statement {
        case .advanceCounters:
            try await rows(of: Prepared<AdvanceCounters>(bindings: bindings), on: connection, logger: logger)
        case .readKeys:
            try await rows(of: Prepared<ReadKeys>(bindings: bindings), on: connection, logger: logger)
        }
    }

    /// Fails unless `keys` without a schema names `schema`'s table on `connection`: the prepared texts rely on it.
    /// - Throws: ``StoreError/Code/storageUnavailable`` naming the `search_path` the connection has instead.
    static func checkSearchPath(
        on connection: PostgresConnection, schema: PostgresSchema, logger: Logger
    ) async throws {
        let check = SQLStatement(
            """
            SELECT current_setting('search_path') AS path,
                (to_regclass('keys') IS NOT NULL AND to_regclass('keys') = to_regclass('\(schema.table("keys"))'))::int::bigint
                AS ours
            """)
        let row = try await PostgresExecutor.run(check, on: connection, logger: logger).first
        guard try row?.integer("ours") == 1 else {
            let path = (try? row?.text("path")) ?? nil
            throw StoreError(
                .storageUnavailable,
                "the connections' search_path is \(path ?? "unknown"), not the store's schema \(schema.quoted): "
                    + "a connection pooler must pass the search_path startup parameter through")
        }
    }

    private static func rows<Kind>(
        of statement: Prepared<Kind>, on connection: PostgresConnection, logger: Logger
    ) async throws -> [PostgresStoreRow] {
        var rows: [PostgresStoreRow] = []
        for try await row in try await connection.execute(statement, logger: logger) {
            rows.append(PostgresStoreRow(row))
        }
        return rows
    }

    /// One execution of the statement of `Kind`, with its binds.
    struct Prepared<Kind: PostgresPreparedKind>: PostgresPreparedStatement {
        typealias Row = PostgresRow

        static var name: String { Kind.name }
        static var sql: String { Kind.sql }

        /// The binds, already encoded.
        let bindings: PostgresBindings

        func makeBindings() -> PostgresBindings { bindings }

        func decodeRow(_ row: PostgresRow) -> PostgresRow { row }
    }
}

/// What one of the ``PostgresPreparedStatements`` is: its name and text, kept once.
protocol PostgresPreparedKind: Sendable {
    /// The name it is prepared under.
    static var name: String { get }
    /// Its text, the key table unqualified.
    static var sql: String { get }
}
