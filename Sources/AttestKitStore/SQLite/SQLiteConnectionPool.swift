import Foundation
import Logging
import NIOPosix
import SQLiteNIO

/// The connections of one SQLite store: one writer and a few readers, each leased to one caller at a time.
///
/// An SQLite connection runs one statement at a time and a transaction belongs to the connection, so a
/// connection is never shared by two operations at once. Writes all go through the single writer, which
/// serialises them within the process without lock contention; other processes are waited for through
/// `busy_timeout`. Readers see the last committed state (WAL). Waiters are served first come, first served.
///
/// Each pool has its own threads, one per connection: the writer a thread of its own, the readers a thread pool
/// with one thread each. SQLite blocks its thread while it waits for a lock (`busy_timeout`); on a shared thread
/// pool, stores waiting for a lock could take every thread and starve the store that holds the lock, which then
/// cannot commit. The writer's statements (every batch of the group commit) always run on the same thread, never
/// behind a read, and that thread stays warm.
///
/// The database is prepared on the first lease: its directory and file are created (mode 0600), WAL is
/// switched on and the schema migrated, before any connection is handed out.
actor SQLiteConnectionPool {
    /// Which kind of connection an operation needs.
    enum Role: Sendable {
        /// The single connection that writes.
        case writer
        /// A read-only connection.
        case reader
    }

    private struct Lane {
        var idle: [SQLiteConnection] = []
        var opened = 0
        var maximum: Int
        var waiters: [CheckedContinuation<SQLiteConnection, any Error>] = []
    }

    private enum Phase {
        case new
        case preparing([CheckedContinuation<Void, any Error>])
        case ready
        case closed
    }

    private let path: String
    private let busyTimeoutMilliseconds: Int
    private let migrations: MigrationPolicy
    private let logger: Logger
    /// The schema found and left by the preparation, once it succeeded.
    private(set) var schemaVersion: SchemaVersion?
    private let driverLogger = Logger(
        label: "attestkit.store.sqlite.driver", factory: { _ in SwiftLogNoOpLogHandler() })
    private var writer: Lane
    private var readers: Lane
    private var phase = Phase.new
    /// The writer's thread and the readers' threads, started with the first connection.
    private var threads: (writer: NIOThreadPool, readers: NIOThreadPool)?
    private var live = 0

    init(path: String, readerCount: Int, busyTimeoutMilliseconds: Int, migrations: MigrationPolicy, logger: Logger) {
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        self.migrations = migrations
        self.logger = logger
        self.writer = Lane(maximum: 1)
        self.readers = Lane(maximum: readerCount)
    }

    /// Prepares the database if no one has yet; waits for a preparation under way.
    ///
    /// The preparation runs in a task of its own, which no caller's cancellation reaches: every caller waits for its
    /// outcome, so that the first caller's task being cancelled (while the connection's open is queued, or during a
    /// retry's pause) does not hand a cancellation to the callers that were not cancelled.
    func prepare() async throws {
        switch phase {
        case .ready:
            return
        case .closed:
            throw StoreError(.storageUnavailable, "the store is closed")
        case .new:
            phase = .preparing([])
            // Detached: the preparation belongs to no caller and carries none of its task-local values (its deadline).
            Task.detached { await self.runPreparation() }
        case .preparing:
            break
        }
        try await withCheckedThrowingContinuation { continuation in
            if case .preparing(var waiters) = phase {
                waiters.append(continuation)
                phase = .preparing(waiters)
            } else {
                // Unreachable: the preparation's task runs on this actor only once this caller has suspended.
                continuation.resume(throwing: StoreError(.storageUnavailable, "the store is closed"))
            }
        }
    }

    /// Prepares the database (``openPrepared()``) and answers every caller waiting in ``prepare()`` with the
    /// outcome; after a failure the next caller prepares again. When the store was closed meanwhile (``close()``
    /// answered the callers), the connection opened is closed.
    private func runPreparation() async {
        let result: Result<Void, any Error>
        do {
            let connection = try await openPrepared()
            writer.opened = 1
            writer.idle = [connection]
            result = .success(())
        } catch {
            result = .failure(error)
        }
        guard case .preparing(let waiters) = phase else {
            // Closed while preparing: the connection, if any, is closed here.
            if case .success = result { await closeAll() }
            return
        }
        switch result {
        case .success:
            phase = .ready
            waiters.forEach { $0.resume() }
        case .failure(let error):
            phase = .new
            waiters.forEach { $0.resume(throwing: error) }
        }
    }

    /// Leases a connection of `role`, waiting for one to be free.
    func acquire(_ role: Role) async throws -> SQLiteConnection {
        try await prepare()
        let role = readers.maximum == 0 ? .writer : role
        if let connection = popIdle(role) { return connection }
        if lane(role).opened < lane(role).maximum {
            update(role) { $0.opened += 1 }
            do {
                let connection = try await open(readOnly: role == .reader)
                guard case .ready = phase else {
                    await retire(connection)
                    throw StoreError(.storageUnavailable, "the store is closed")
                }
                return connection
            } catch {
                update(role) { $0.opened -= 1 }
                handOverSlot(role)
                throw error
            }
        }
        return try await withCheckedThrowingContinuation { continuation in
            update(role) { $0.waiters.append(continuation) }
        }
    }

    /// After a failed open freed a place of `role`'s lane: the first waiter, if any, takes the place and opens a
    /// connection of its own, so that no caller waits for a connection nobody is opening (it would wait until some
    /// other read came back, and forever if none did).
    private func handOverSlot(_ role: Role) {
        guard case .ready = phase, !lane(role).waiters.isEmpty, lane(role).opened < lane(role).maximum else { return }
        var waiter: CheckedContinuation<SQLiteConnection, any Error>?
        update(role) {
            waiter = $0.waiters.removeFirst()
            $0.opened += 1
        }
        guard let waiter else { return }
        Task { await open(role, for: waiter) }
    }

    /// Opens a connection of `role` for `waiter`, which holds a place in the lane: on failure the place is freed,
    /// the waiter gets the error, and the next waiter takes the place (``handOverSlot(_:)``).
    private func open(_ role: Role, for waiter: CheckedContinuation<SQLiteConnection, any Error>) async {
        do {
            let connection = try await open(readOnly: role == .reader)
            guard case .ready = phase else {
                await retire(connection)
                waiter.resume(throwing: StoreError(.storageUnavailable, "the store is closed"))
                return
            }
            waiter.resume(returning: connection)
        } catch {
            update(role) { $0.opened -= 1 }
            waiter.resume(throwing: error)
            handOverSlot(role)
        }
    }

    /// Returns a leased connection: to the first waiter, or to the idle list.
    func release(_ connection: SQLiteConnection, _ role: Role) async {
        let role = readers.maximum == 0 ? .writer : role
        guard case .ready = phase else {
            await retire(connection)
            return
        }
        if !lane(role).waiters.isEmpty {
            var waiter: CheckedContinuation<SQLiteConnection, any Error>?
            update(role) { waiter = $0.waiters.removeFirst() }
            waiter?.resume(returning: connection)
        } else {
            update(role) { $0.idle.append(connection) }
        }
    }

    /// Closes every idle connection now and every leased one when it comes back; fails all waiters.
    func close() async {
        if case .preparing(let waiters) = phase {
            waiters.forEach { $0.resume(throwing: StoreError(.storageUnavailable, "the store is closed")) }
        }
        phase = .closed
        await closeAll()
        if live == 0 { await stopThreads() }
    }

    /// Stops the threads (once no connection is left).
    private func stopThreads() async {
        guard let threads else { return }
        self.threads = nil
        try? await threads.writer.shutdownGracefully()
        try? await threads.readers.shutdownGracefully()
    }

    private func closeAll() async {
        let idle = writer.idle + readers.idle
        let waiters = writer.waiters + readers.waiters
        writer.idle = []
        readers.idle = []
        writer.waiters = []
        readers.waiters = []
        waiters.forEach { $0.resume(throwing: StoreError(.storageUnavailable, "the store is closed")) }
        for connection in idle {
            await retire(connection)
        }
    }

    /// Closes a connection; once the pool is closed and the last connection is gone, stops the threads.
    private func retire(_ connection: SQLiteConnection) async {
        // The future-based close, not the async one: SQLiteNIO refuses work for a cancelled task, and a store
        // whose run() was cancelled must still close its connections.
        try? await connection.close().get()
        live -= 1
        if case .closed = phase, live == 0 { await stopThreads() }
    }

    // MARK: Lanes

    private func lane(_ role: Role) -> Lane {
        role == .writer ? writer : readers
    }

    private func update(_ role: Role, _ body: (inout Lane) -> Void) {
        switch role {
        case .writer: body(&writer)
        case .reader: body(&readers)
        }
    }

    private func popIdle(_ role: Role) -> SQLiteConnection? {
        var connection: SQLiteConnection?
        update(role) { connection = $0.idle.popLast() }
        return connection
    }

    // MARK: Opening

    /// Opens a connection and sets its per-connection pragmas.
    private func open(readOnly: Bool) async throws -> SQLiteConnection {
        let threads: (writer: NIOThreadPool, readers: NIOThreadPool)
        if let existing = self.threads {
            threads = existing
        } else {
            threads = (
                NIOThreadPool(numberOfThreads: writer.maximum), NIOThreadPool(numberOfThreads: max(1, readers.maximum))
            )
            threads.writer.start()
            threads.readers.start()
            self.threads = threads
        }
        let connection = try await SQLiteConnection.open(
            storage: .file(path: path), threadPool: readOnly ? threads.readers : threads.writer, logger: driverLogger,
            on: MultiThreadedEventLoopGroup.singleton.any())
        live += 1
        do {
            // Replaces the driver's busy handler (which retries forever) with a bounded wait.
            _ = try await connection.query("PRAGMA busy_timeout = \(busyTimeoutMilliseconds)")
            _ = try await connection.query("PRAGMA synchronous = FULL")
            _ = try await connection.query("PRAGMA foreign_keys = ON")
            if readOnly { _ = try await connection.query("PRAGMA query_only = ON") }
            return connection
        } catch {
            await retire(connection)
            throw error
        }
    }

    /// Creates the file if needed, opens the writer, switches to WAL and migrates the schema (under
    /// ``MigrationPolicy/verify``: the file must exist, and its schema is only checked).
    ///
    /// Switching a new file to WAL needs an exclusive lock that SQLite does not wait for; when another
    /// process (or store) is preparing the same file at the same moment, the step is retried with a short
    /// backoff for up to the busy timeout.
    private func openPrepared() async throws -> SQLiteConnection {
        if migrations == .apply {
            try SQLiteSchema.createFile(at: path)
        } else if !FileManager.default.fileExists(atPath: path) {
            throw StoreError(
                .storageUnavailable,
                "the SQLite database does not exist and this server does not migrate: "
                    + "run `attestkit migrate`")
        }
        let connection = try await open(readOnly: false)
        do {
            try await retryingWhileBusy {
                let mode = try await connection.query("PRAGMA journal_mode = WAL").first?.column("journal_mode")?.string
                guard mode?.lowercased() == "wal" else {
                    throw StoreError(.storageUnavailable, "the SQLite database could not switch to WAL")
                }
            }
            let policy = migrations
            var version: SchemaVersion?
            try await retryingWhileBusy { version = try await SQLiteSchema.migrate(connection, policy: policy) }
            schemaVersion = version
            logger.debug(
                "SQLite store ready", metadata: ["path": "\(path)", "schema": "\(version.map(\.current) ?? 0)"])
            return connection
        } catch {
            await retire(connection)
            throw error
        }
    }

    /// Runs `body` again while SQLite answers busy or locked, for at most the busy timeout.
    private func retryingWhileBusy(_ body: () async throws -> Void) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(busyTimeoutMilliseconds))
        var pause = Duration.milliseconds(2)
        while true {
            do {
                return try await body()
            } catch let error as SQLiteError where Self.isBusy(error) && clock.now < deadline {
                try await Task.sleep(for: pause)
                pause = min(pause * 2, .milliseconds(100))
            }
        }
    }

    private static func isBusy(_ error: SQLiteError) -> Bool {
        switch error.reason {
        case .busy, .locked, .busyInRecovery, .busyInSnapshot, .busyTimeout, .lockedBySharedCache: true
        default: false
        }
    }
}
