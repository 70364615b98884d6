#if canImport(Glibc) || os(macOS)
    #if canImport(Glibc)
        import Glibc
    #else
        import Darwin
    #endif
    import Foundation

    /// A child process launched with `posix_spawn`, for the package's tests and `attestkit load`: Foundation's `Process`
    /// is not used, because swift-corelibs-foundation's `Process.run()` (Swift 6.3.1) over-reads `/proc/self/fd` while
    /// listing the descriptors to close and crashes (SIGSEGV in `memcpy`) in a process holding many descriptors, as a
    /// test run does (swiftlang/swift-corelibs-foundation#5472).
    ///
    /// The child gets the executable's path as `argv[0]`, `arguments`, exactly `environment` (the parent's when `nil`),
    /// and standard streams as asked (``Stream``). It inherits no other descriptor of the parent: on Linux the spawn
    /// closes every descriptor from 3 up (`posix_spawn_file_actions_addclosefrom_np`, glibc 2.34, found with `dlsym`
    /// because Swift's Glibc module does not declare it; on an older glibc it closes each descriptor listed in
    /// `/proc/self/fd` just before the spawn), on macOS `POSIX_SPAWN_CLOEXEC_DEFAULT` does the same. So a child never
    /// holds another child's pipe or a server's listening socket open. The parent's own pipe ends are made
    /// close-on-exec, and all launches take one lock from the pipes' creation to the spawn, so no launch of this type
    /// can hand a sibling's pipe end to its child even on the fallback path; a descriptor another thread opens without
    /// `O_CLOEXEC` between the fallback's listing and its spawn can still reach the child (only on glibc before 2.34).
    ///
    /// As Foundation did, the child gets a process group of its own (a terminal's Ctrl-C reaches the parent, which
    /// stops its children). Unlike Foundation, every signal's disposition is reset to the default and no signal is
    /// blocked in the child, so a test process that ignores or blocks `SIGTERM` (a signal handler of another suite)
    /// cannot make ``terminate()`` ineffective.
    ///
    /// A thread of its own waits for the child (`waitid`, then `waitpid` under the lock), so every child is reaped,
    /// whoever holds this object, and signals are sent only while the child has not been reaped: a signal never reaches
    /// a process that reused the pid.
    ///
    /// Not for adopters (`package` access); Linux (glibc) and macOS only.
    package final class ChildProcess: @unchecked Sendable {
        /// Where a standard stream of the child goes.
        package enum Stream: Sendable, Hashable {
            /// The parent's own descriptor.
            case inherit
            /// `/dev/null`.
            case null
            /// A file at this path: read for standard input; created or truncated, then written, for an output.
            case file(String)
            /// A pipe whose other end the parent holds: ``ChildProcess/inputPipe``, ``ChildProcess/outputPipe`` or
            /// ``ChildProcess/errorPipe``.
            case pipe
            /// For standard error only: wherever standard output goes (one pipe or file for both, in order).
            case sameAsOutput
        }

        /// How the child ended.
        package enum Termination: Sendable, Hashable, CustomStringConvertible {
            /// It exited with this code (0 to 255). `-1` when its status was lost: something else in the process
            /// reaped it (a `waitpid(-1)` elsewhere, or `SIGCHLD` ignored).
            case exit(Int32)
            /// A signal ended it.
            case signal(Int32)

            /// The exit code or the signal's number, as Foundation's `terminationStatus`.
            package var status: Int32 {
                switch self {
                case .exit(let code): code
                case .signal(let signal): signal
                }
            }

            /// `exit 3`, `signal 15`.
            package var description: String {
                switch self {
                case .exit(let code): "exit \(code)"
                case .signal(let signal): "signal \(signal)"
                }
            }

            /// Decodes a `waitpid` status (`WIFEXITED`, `WEXITSTATUS`, `WTERMSIG`, which Swift does not import).
            init(waitStatus status: Int32) {
                self = status & 0x7F == 0 ? .exit((status >> 8) & 0xFF) : .signal(status & 0x7F)
            }
        }

        /// What ``collectOutput(limit:)`` read, and how the child ended.
        package struct Output: Sendable {
            /// How the child ended.
            package var termination: Termination
            /// Its standard output (empty unless it was a ``Stream/pipe``).
            package var standardOutput: [UInt8]
            /// Its standard error (empty unless it was a ``Stream/pipe``).
            package var standardError: [UInt8]
        }

        /// A launch or pipe failure, naming the executable and the system's error.
        package struct Failure: Error, CustomStringConvertible, Sendable {
            /// The executable as given.
            package let executable: String
            /// What failed (`posix_spawn`, `pipe`, `read`, ...).
            package let operation: String
            /// The `errno` value.
            package let code: Int32

            /// `posix_spawn of /bin/missing failed: No such file or directory (errno 2)`.
            package var description: String {
                "\(operation) of \(executable) failed: \(String(cString: strerror(code))) (errno \(code))"
            }
        }

        /// The child's process id.
        package let processIdentifier: Int32
        /// The executable as given.
        package let executable: String
        /// The parent's end of the child's standard input when it is a ``Stream/pipe``: write, then close it.
        package let inputPipe: PipeEnd?
        /// The parent's end of the child's standard output when it is a ``Stream/pipe``.
        package let outputPipe: PipeEnd?
        /// The parent's end of the child's standard error when it is a ``Stream/pipe``.
        package let errorPipe: PipeEnd?

        /// Guards `ended` and `waiters`; signalled when the child is reaped.
        private let condition = NSCondition()
        private var ended: Termination?
        private var waiters: [CheckedContinuation<Termination, Never>] = []

        /// Held from the creation of a launch's pipes to the closing of the child's ends after the spawn.
        private static let launchLock = NSLock()

        /// Launches `executable` (a path; a name without `/` is looked up in the parent's `PATH`).
        ///
        /// - Throws: ``Failure`` when a pipe cannot be made or the spawn fails (a missing or non-executable file, a
        ///   missing file for ``Stream/file(_:)``), or with `EINVAL` for ``Stream/sameAsOutput`` on standard input or
        ///   output.
        package init(
            executable: String, arguments: [String] = [], environment: [String: String]? = nil,
            standardInput: Stream = .inherit, standardOutput: Stream = .inherit, standardError: Stream = .inherit
        ) throws {
            self.executable = executable
            guard standardInput != .sameAsOutput, standardOutput != .sameAsOutput else {
                throw Failure(executable: executable, operation: "configuration", code: EINVAL)
            }
            Self.launchLock.lock()
            defer { Self.launchLock.unlock() }
            // The parent's ends (kept) and the child's ends (closed here once the child has them).
            var childEnds: [Int32] = []
            defer { for descriptor in childEnds { _ = systemClose(descriptor) } }
            func pipeEnds(_ stream: Stream, childReads: Bool) throws -> (parent: PipeEnd, child: Int32)? {
                guard stream == .pipe else { return nil }
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw Failure(executable: executable, operation: "pipe", code: errno) }
                for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
                childEnds.append(childReads ? ends[0] : ends[1])
                return (
                    PipeEnd(descriptor: childReads ? ends[1] : ends[0], executable: executable),
                    childReads ? ends[0] : ends[1]
                )
            }
            let input = try pipeEnds(standardInput, childReads: true)
            let output = try pipeEnds(standardOutput, childReads: false)
            let errors = try pipeEnds(standardError, childReads: false)
            inputPipe = input?.parent
            outputPipe = output?.parent
            errorPipe = errors?.parent

            var actions = SpawnActions()
            var attributes = SpawnAttributes()
            for (operation, result) in [("file actions", actions.initialized), ("attributes", attributes.initialized)]
            where result != 0 {
                throw Failure(executable: executable, operation: operation, code: result)
            }
            let streams = [
                (standardInput, input?.child), (standardOutput, output?.child), (standardError, errors?.child),
            ]
            for (target, (stream, pipeEnd)) in streams.enumerated() {
                let target = Int32(target)
                let flags = target == 0 ? O_RDONLY : O_WRONLY | O_CREAT | O_TRUNC
                let result: Int32 =
                    switch stream {
                    case .inherit: actions.inherit(target)
                    case .null: actions.open(target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY)
                    case .file(let path): actions.open(target, path, flags)
                    case .pipe: actions.duplicate(pipeEnd ?? -1, to: target)
                    case .sameAsOutput: actions.duplicate(1, to: target)
                    }
                guard result == 0 else {
                    throw Failure(executable: executable, operation: "file actions", code: result)
                }
            }
            let closed = actions.closeFromThree()
            guard closed == 0 else { throw Failure(executable: executable, operation: "file actions", code: closed) }

            let environment = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
            let argv = ([executable] + arguments).map { strdup($0) } + [nil]
            let envp = environment.map { strdup($0) } + [nil]
            defer { for pointer in argv + envp { free(pointer) } }
            var pid: pid_t = 0
            let spawned = actions.spawn(&pid, executable, attributes: &attributes, argv: argv, envp: envp)
            guard spawned == 0 else {
                throw Failure(
                    executable: executable, operation: executable.contains("/") ? "posix_spawn" : "posix_spawnp",
                    code: spawned)
            }
            processIdentifier = pid
            let reaper = Thread { [self] in reap() }
            reaper.stackSize = 1 << 16
            reaper.start()
        }

        /// Whether the child has not been reaped yet (it may be a zombie for a moment after it exits).
        package var isRunning: Bool { termination == nil }

        /// How the child ended, or `nil` while it runs.
        package var termination: Termination? {
            condition.lock()
            defer { condition.unlock() }
            return ended
        }

        /// Sends `signal` (`SIGKILL`, `SIGSTOP`, `SIGCONT`, ...) to the child, unless it has been reaped.
        /// - Returns: Whether the signal was sent.
        @discardableResult
        package func signal(_ signal: Int32) -> Bool {
            condition.lock()
            defer { condition.unlock() }
            guard ended == nil else { return false }
            return kill(processIdentifier, signal) == 0
        }

        /// Sends `SIGTERM`, unless the child has been reaped.
        package func terminate() { signal(SIGTERM) }

        /// Blocks the calling thread until the child has exited and been reaped.
        @discardableResult
        package func waitUntilExit() -> Termination {
            condition.lock()
            defer { condition.unlock() }
            while true {
                if let ended { return ended }
                condition.wait()
            }
        }

        /// Suspends until the child has exited and been reaped (no thread is blocked meanwhile). Cancellation does not
        /// end the wait: signal the child to end it sooner.
        package func wait() async -> Termination {
            await withCheckedContinuation { continuation in
                condition.lock()
                if let ended {
                    condition.unlock()
                    continuation.resume(returning: ended)
                } else {
                    waiters.append(continuation)
                    condition.unlock()
                }
            }
        }

        /// Reads ``outputPipe`` and ``errorPipe`` (those there are) to their end together, so that a child filling one
        /// while the parent reads the other cannot deadlock, then waits for the child. Blocks the calling thread.
        ///
        /// - Parameter limit: The most bytes kept of each stream; more is read and dropped, so the child never blocks.
        package func collectOutput(limit: Int = 1 << 24) throws -> Output {
            let pipes = [outputPipe, errorPipe].compactMap { $0 }
            let read = try PipeEnd.readToEnd(pipes, limit: limit, executable: executable)
            var next = read.makeIterator()
            let standardOutput = outputPipe == nil ? [] : next.next() ?? []
            let standardError = errorPipe == nil ? [] : next.next() ?? []
            return Output(termination: waitUntilExit(), standardOutput: standardOutput, standardError: standardError)
        }

        /// ``collectOutput(limit:)`` on a thread of its own, so no thread of Swift's concurrency pool is blocked.
        package func collectOutput(limit: Int = 1 << 24) async throws -> Output {
            try await withCheckedThrowingContinuation { continuation in
                Thread.detachNewThread { [self] in
                    continuation.resume(with: Result { try collectOutput(limit: limit) })
                }
            }
        }

        /// The reaper thread: waits for the exit without reaping, then reaps under the lock, so ``signal(_:)`` (which
        /// holds it) never signals a pid that was freed.
        private func reap() {
            var info = siginfo_t()
            while waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) != 0, errno == EINTR {}
            condition.lock()
            var status: Int32 = 0
            var reaped: pid_t
            repeat { reaped = waitpid(processIdentifier, &status, 0) } while reaped < 0 && errno == EINTR
            let termination = reaped == processIdentifier ? Termination(waitStatus: status) : .exit(-1)
            ended = termination
            let resumed = waiters
            waiters = []
            condition.broadcast()
            condition.unlock()
            for waiter in resumed { waiter.resume(returning: termination) }
        }
    }

    /// `close(2)`, callable inside types that have a `close()` of their own.
    func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
#endif
