import NIOConcurrencyHelpers
import PostgresNIO

/// The deadline of one ``PostgresAttestationStore`` operation
/// (``PostgresStoreConfiguration/operationTimeout``): the caller is answered by then, whatever the database and
/// the driver do.
///
/// Why the caller cannot simply wait for the operation to end, even after closing its connection: `postgres-nio`
/// (1.33) sends a query by writing a task that holds its promise into the connection's channel. Once a channel has
/// closed, NIO removes its handlers, and a write then fails at the head of the empty pipeline: the task, and the
/// promise in it, are dropped without ever being completed, so the query's `await` never returns. The pool learns
/// of a close only when the channel's close future fires, one event-loop turn after the handlers are gone, so a
/// connection it hands out can close (a database restart, a crash, or this deadline closing it) before the new
/// holder writes its first query. (Checked directly: a query after the close future fired never answered; one
/// sent just before fails with `clientClosedConnection`.) The wait for a pooled connection has a similar gap, read
/// in the pool's code: a cancellation that comes between the pool's own check and the request joining its queue is
/// lost, and the request waits for a free connection. When the caller waited for the operation, the fault tests
/// (`ServePostgresFaultTests`) saw requests never answered after a restart, a crash and a freeze, and SIGTERM not
/// finishing in 20 s.
///
/// So the operation runs in a task of its own, and the caller waits for the first of its outcome and a timer. When
/// the timer wins, the connection the operation leased (if any) is closed, which fails a query that was sent at
/// once, and the pool drops it instead of handing it out again in an unknown state (mid-query or
/// mid-transaction); the operation's task is cancelled and left to end on its own (it holds nothing the pool
/// needs: the closed connection leaves the pool by its close future). A connection that is already closed when
/// it is leased, or that a deadline is closing, is given back and another one leased (``Lease/use(_:_:)``), so a
/// restart costs no request its deadline.
///
/// A deadline's close takes a moment: the operation's pending query fails as the close begins on the event loop,
/// its task hands the connection back to the pool, and the channel turns inactive (`isClosed`) only after that,
/// on the event loop, while the pool learns of the close later still. A call that leased the connection
/// meanwhile saw it open, sent its query into the closing connection and failed at once with
/// `clientClosedConnection`, without reaching the database, though a fresh connection could have served it. So
/// the connections a deadline is closing are kept (``Closing``) until their close future fires, and a lease
/// treats them as closed.
struct PostgresDeadline: Sendable {
    /// How long one operation may take, leasing a connection included.
    let timeout: Duration

    /// The connections this store's deadlines are closing, shared by every copy of the deadline.
    let closing = Closing()

    /// How long to wait before leasing again after the pool handed out a closed connection: the pool drops it
    /// within an event-loop turn.
    static let staleConnectionPause = Duration.milliseconds(5)

    /// The end of an operation that starts now: the deadline that statements of one store call share (a refusal's
    /// follow-up read shares its write's), and no later than ``timeout`` after the start of the request it serves
    /// (``StoreRequestDeadline``).
    func end() -> ContinuousClock.Instant {
        let own = ContinuousClock.now + timeout
        guard let began = StoreRequestDeadline.began else { return own }
        return min(own, began + timeout)
    }

    /// Runs `body` within ``timeout``, or until `end` (from ``end()``) when given.
    ///
    /// `body` must use each connection it leases through ``Lease/use(_:_:)``; it runs again when that finds the
    /// connection closed before anything was sent.
    /// - Throws: ``StoreError/Code/storageUnavailable`` naming `operation` when the time is up or the caller's task
    ///   is cancelled, or what `body` throws.
    func run<Result: Sendable>(
        _ operation: StaticString,
        by end: ContinuousClock.Instant? = nil,
        _ body: @escaping @Sendable (Lease) async throws -> Result
    ) async throws -> Result {
        let end = end ?? self.end()
        let lease = Lease(closing: closing)
        let outcome = Outcome<Result>()
        let work = Task {
            do {
                while true {
                    do {
                        outcome.settle(.success(try await body(lease)))
                        return
                    } catch is Lease.ClosedConnection {
                        try await Task.sleep(for: Self.staleConnectionPause)
                    }
                }
            } catch {
                outcome.settle(.failure(error))
            }
        }
        let timeout = self.timeout
        do {
            return try await withThrowingTaskGroup(of: Result?.self) { group in
                group.addTask { try await outcome.value() }
                group.addTask {
                    try await Task.sleep(until: end, clock: .continuous)
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let result = first else {
                    throw StoreError(
                        .storageUnavailable, "\(operation) did not answer within \(Self.seconds(timeout)) s")
                }
                return result
            }
        } catch {
            lease.expire()
            work.cancel()
            if error is CancellationError {
                throw StoreError(.storageUnavailable, "\(operation) was cancelled")
            }
            throw error
        }
    }

    /// `10`, `1.5`: a duration in seconds for error reasons.
    static func seconds(_ duration: Duration) -> String {
        let components = duration.components
        guard components.attoseconds != 0 else { return "\(components.seconds)" }
        return "\(Double(components.seconds) + Double(components.attoseconds) / 1e18)"
    }

    /// The connections deadlines closed whose close has not completed yet: open to `isClosed`, and still in the
    /// pool, which may hand one out again.
    final class Closing: Sendable {
        private let connections = NIOLockedValueBox<[ObjectIdentifier: PostgresConnection]>([:])

        /// Closes `connection`, which counts as closing until its close future fires (by then `isClosed` holds).
        func close(_ connection: PostgresConnection) {
            let key = ObjectIdentifier(connection)
            connections.withLockedValue { $0[key] = connection }
            let closing: EventLoopFuture<Void> = connection.close()
            closing.whenComplete { _ in self.connections.withLockedValue { $0[key] = nil } }
        }

        /// Whether a deadline is closing `connection`.
        func contains(_ connection: PostgresConnection) -> Bool {
            connections.withLockedValue { $0[ObjectIdentifier(connection)] != nil }
        }
    }

    /// The connection an operation is using, closed when its deadline passes.
    final class Lease: Sendable {
        /// The pool handed out a connection that had already closed, or that a deadline is closing; nothing was
        /// sent on it.
        struct ClosedConnection: Error {}

        private let closing: Closing
        private let state = NIOLockedValueBox<(connection: PostgresConnection?, expired: Bool)>((nil, false))

        init(closing: Closing) {
            self.closing = closing
        }

        /// Runs `body` on a leased connection, which is closed if the deadline passes meanwhile.
        ///
        /// Call it first thing in `withConnection`, and return from `withConnection` right after it: once `body`
        /// has ended the connection is no longer the operation's (the pool may lend it to another), and the
        /// deadline leaves it alone.
        /// - Throws: ``ClosedConnection`` when the connection is closed already, or a deadline is closing it
        ///   (nothing is sent: the operation runs again on another connection); `CancellationError` when the
        ///   deadline has passed (nothing is sent: the connection goes back to the pool); or what `body` throws.
        func use<Value>(
            _ connection: PostgresConnection, _ body: (PostgresConnection) async throws -> Value
        ) async throws -> Value {
            let expired = state.withLockedValue { state in
                if !state.expired { state.connection = connection }
                return state.expired
            }
            // Nothing was sent: the connection goes back to the pool as it came.
            guard !expired else { throw CancellationError() }
            defer { state.withLockedValue { $0.connection = nil } }
            guard !connection.isClosed, !closing.contains(connection) else { throw ClosedConnection() }
            return try await body(connection)
        }

        /// Marks the deadline passed and closes the connection in use, failing its pending query.
        func expire() {
            let connection = state.withLockedValue { state in
                state.expired = true
                return state.connection
            }
            if let connection { closing.close(connection) }
        }
    }

    /// The outcome of an operation, handed to at most one waiter, who may stop waiting (cancellation) first.
    final class Outcome<Value: Sendable>: Sendable {
        private enum State {
            case pending
            case waiting(CheckedContinuation<Value, any Error>)
            case settled(Result<Value, any Error>)
            case done
        }

        private let state = NIOLockedValueBox(State.pending)

        /// Records the outcome and wakes the waiter, if any; later calls are ignored.
        func settle(_ result: Result<Value, any Error>) {
            decide(pending: .settled(result))?.resume(with: result)
        }

        /// Moves a pending outcome to `next`; hands back the waiter, if there is one, to be woken.
        private func decide(pending next: State) -> CheckedContinuation<Value, any Error>? {
            state.withLockedValue { state in
                switch state {
                case .pending:
                    state = next
                    return nil
                case .waiting(let continuation):
                    state = .done
                    return continuation
                case .settled, .done:
                    return nil
                }
            }
        }

        /// Waits for the outcome.
        /// - Throws: what the operation threw, or `CancellationError` when the waiting task is cancelled first.
        func value() async throws -> Value {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
                    let ready = state.withLockedValue { state -> Result<Value, any Error>? in
                        switch state {
                        case .pending:
                            state = .waiting(continuation)
                            return nil
                        case .settled(let result):
                            state = .done
                            return result
                        case .waiting, .done:
                            return .failure(CancellationError())
                        }
                    }
                    if let ready { continuation.resume(with: ready) }
                }
            } onCancel: {
                decide(pending: .done)?.resume(throwing: CancellationError())
            }
        }
    }
}
