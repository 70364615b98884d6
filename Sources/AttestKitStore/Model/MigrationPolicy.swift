/// What a SQL store does with its schema when it is prepared.
///
/// ``apply`` (the default) applies the migrations this release knows and the database lacks, under a lock that
/// serialises preparers. ``verify`` applies nothing: it only checks that this release can run on the schema it
/// finds, so that a server can run with a role that has no DDL rights while migrations are applied apart
/// (`attestkit migrate`). Either way a schema newer than this release is accepted only when every migration after
/// the ones this release knows declared itself additive.
public struct MigrationPolicy: Sendable, Hashable, CustomStringConvertible {
    /// `apply` or `verify`.
    public let rawValue: String

    private init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Apply the missing migrations.
    public static let apply = MigrationPolicy("apply")
    /// Apply nothing; refuse a schema this release cannot run on, including one that lacks migrations.
    public static let verify = MigrationPolicy("verify")

    public var description: String { rawValue }
}
