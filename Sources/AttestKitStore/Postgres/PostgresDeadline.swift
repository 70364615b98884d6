import NIOConcurrencyHelpers
import PostgresNIO

/// The deadline of one ``PostgresAttestationStore`` operation
/// (``PostgresStoreConfiguration/operationTimeout``).
///
/// `postgres-nio` cancels the wait for a pooled connection when the task is cancelled, but not a query that
/// was sent: a server that stopped answering holds the call until TCP gives up, about a minute or more. So
/// the operation races a timer in a task group; when the timer wins, the connection the operation leased
/// (if any) is closed, which fails its query at once, and the pool drops it instead of handing it out
/// again in an unknown state (mid-query or mid-transaction). The waiting for a connection is cancelled.
///
/// The caller hears of the timeout only once the operation has ended: returning earlier lets the pool hand the
/// closing connection to the caller's next operation, which then fails with `clientClosedConnection` (tried, and
/// seen in the deadline tests). The operation ends promptly once its connection is closed.
struct PostgresDeadline: Sendable {
    /// How long one operation may take, leasing a connection included.
    let timeout: Duration

    /// Runs `body` within ``timeout``.
    ///
    /// `body` must pass each connection it leases to ``Lease/lend(_:)`` before using it.
    /// - Throws: ``StoreError/Code/storageUnavailable`` naming `operation` when the time is up, or what `body`
    ///   throws.
    func run<Result: Sendable>(
        _ operation: StaticString,
        _ body: @escaping @Sendable (Lease) async throws -> Result
    ) async throws -> Result {
        let lease = Lease()
        let timeout = self.timeout
        return try await withThrowingTaskGroup(of: Result?.self) { group in
            group.addTask { try await body(lease) }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else {
                throw StoreError(.storageUnavailable, "\(operation) was cancelled")
            }
            if let result = first { return result }
            lease.expire()
            throw StoreError(
                .storageUnavailable, "\(operation) did not answer within \(Self.seconds(timeout)) s")
        }
    }

    /// `10`, `1.5`: a duration in seconds for error reasons.
    static func seconds(_ duration: Duration) -> String {
        let components = duration.components
        guard components.attoseconds != 0 else { return "\(components.seconds)" }
        return "\(Double(components.seconds) + Double(components.attoseconds) / 1e18)"
    }

    /// The connection an operation holds, closed when its deadline passes.
    final class Lease: Sendable {
        private let state = NIOLockedValueBox<(connection: PostgresConnection?, expired: Bool)>((nil, false))

        /// Records the connection the operation is about to use.
        /// - Throws: `CancellationError` (and closes the connection) when the deadline has already passed.
        func lend(_ connection: PostgresConnection) throws {
            let expired = state.withLockedValue { state in
                if !state.expired { state.connection = connection }
                return state.expired
            }
            guard !expired else {
                Self.close(connection)
                throw CancellationError()
            }
        }

        /// Marks the deadline passed and closes the connection in use, failing its pending query.
        func expire() {
            let connection = state.withLockedValue { state in
                state.expired = true
                return state.connection
            }
            if let connection { Self.close(connection) }
        }

        private static func close(_ connection: PostgresConnection) {
            let closing: EventLoopFuture<Void> = connection.close()
            closing.whenComplete { _ in }
        }
    }
}
