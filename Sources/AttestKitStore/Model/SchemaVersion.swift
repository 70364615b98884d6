/// The schema a SQL store found and left when it was prepared (``MigrationPolicy``).
public struct SchemaVersion: Sendable, Hashable, CustomStringConvertible {
    /// The number of migrations the database had applied before this preparation.
    public var found: Int
    /// The number of migrations the database has applied now.
    public var current: Int
    /// The number of migrations this release knows.
    public var known: Int

    /// Creates a report.
    public init(found: Int, current: Int, known: Int) {
        self.found = found
        self.current = current
        self.known = known
    }

    /// `schema version 6 (was 4; this release knows 6)`.
    public var description: String {
        "schema version \(current) (was \(found); this release knows \(known))"
    }
}
