/// One step of a SQL store's schema: its statements, and whether the release before it can still run on the
/// schema it leaves.
///
/// Migrations are counted: a release "knows" the migrations its code lists, and the schema records how many were
/// applied (``SQLMigrations``). An *additive* step (a new table, a new nullable column, a new index) leaves a
/// schema the previous release runs on unchanged, so replicas of both releases can share the database during a
/// rolling upgrade and a rollback needs no down-migration. A step that renames, drops or tightens what the
/// previous release reads or writes is not additive: it is applied only once no replica of that release is left
/// (expand, then contract, in two releases).
struct SQLMigration: Sendable {
    /// Its statements, one per driver call.
    let statements: [String]
    /// Whether a release that knows only the migrations before this one can run on the schema it leaves.
    let keepsPreviousRelease: Bool

    /// An additive step: the previous release runs on the schema it leaves.
    static func additive(_ statements: String...) -> SQLMigration {
        SQLMigration(statements: statements, keepsPreviousRelease: true)
    }

    /// A step the previous release cannot run on (it creates, drops or changes what that release relies on).
    static func breaking(_ statements: String...) -> SQLMigration {
        SQLMigration(statements: statements, keepsPreviousRelease: false)
    }

    /// The fewest migrations a release must know to run on a schema `migrations` leave: the number of the last
    /// step that is not additive (every step after it keeps the release before it).
    static func oldestCompatibleRelease(of migrations: [SQLMigration]) -> Int {
        (migrations.lastIndex { !$0.keepsPreviousRelease } ?? -1) + 1
    }
}
