import NIOConcurrencyHelpers

@testable import AttestKitStore

/// An ``SQLExecutor`` that runs every statement on `base` and records it first, with the operation that ran it:
/// the statements a test reads (their plans, say) are the store's own, never copies.
struct RecordingExecutor<Base: SQLExecutor>: SQLExecutor {
    typealias Row = Base.Row

    /// One statement as run.
    struct Entry: Sendable {
        /// The operation that ran it (`"consuming a challenge"`).
        let operation: String
        /// The statement, with its binds.
        let statement: SQLStatement
    }

    let base: Base
    let entries = NIOLockedValueBox<[Entry]>([])

    /// Every statement recorded so far, oldest first.
    var recorded: [Entry] { entries.withLockedValue { $0 } }

    var dialect: SQLDialect { base.dialect }

    func table(_ name: String) -> String { base.table(name) }

    func callDeadline() -> ContinuousClock.Instant? { base.callDeadline() }

    func record(_ operation: StaticString, _ statement: SQLStatement) {
        entries.withLockedValue { $0.append(Entry(operation: "\(operation)", statement: statement)) }
    }

    func query(
        _ operation: StaticString, _ statement: SQLStatement, access: SQLAccess, by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [Row] {
        record(operation, statement)
        return try await base.query(operation, statement, access: access, by: end)
    }

    func combinableWrite(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [Row] {
        record(operation, statement)
        return try await base.combinableWrite(operation, statement, combinable, by: end)
    }

    func combinableRead(
        _ operation: StaticString, _ statement: SQLStatement, _ combinable: SQLCombinableWrite,
        by end: ContinuousClock.Instant?
    ) async throws(StoreError) -> [Row] {
        record(operation, statement)
        return try await base.combinableRead(operation, statement, combinable, by: end)
    }

    func changes(_ operation: StaticString, _ statement: SQLStatement) async throws(StoreError) -> Int {
        record(operation, statement)
        return try await base.changes(operation, statement)
    }

    func transaction<Result: Sendable>(
        _ operation: StaticString, by end: ContinuousClock.Instant?,
        _ body: @escaping @Sendable (_ run: (SQLStatement) async throws -> [Row]) async throws -> Result
    ) async throws(StoreError) -> Result {
        let entries = entries
        return try await base.transaction(operation, by: end) { run in
            try await body { statement in
                entries.withLockedValue { $0.append(Entry(operation: "\(operation)", statement: statement)) }
                return try await run(statement)
            }
        }
    }
}
