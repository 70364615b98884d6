import AttestKitTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `posix_spawn` launcher that replaced Foundation's `Process` in the tests and `attestkit load`: statuses,
/// streams, environment, signals, spawn failures and the descriptors a child inherits.
@Suite struct ChildProcessTests {
    /// Kills the child's process group (the shell and what it started) after `limit`, so that a hang fails the test
    /// instead of stalling the run. Cancel it once the test has its answer.
    private static func watchdog(_ child: ChildProcess, after limit: Duration = .seconds(30)) -> Task<Void, Never> {
        let group = child.processIdentifier
        return Task {
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            kill(-group, SIGKILL)
        }
    }

    private static func shell(
        _ script: String, environment: [String: String]? = nil, standardOutput: ChildProcess.Stream = .pipe,
        standardError: ChildProcess.Stream = .pipe
    ) throws -> ChildProcess {
        try ChildProcess(
            executable: "/bin/sh", arguments: ["-c", script], environment: environment, standardInput: .null,
            standardOutput: standardOutput, standardError: standardError)
    }

    @Test(arguments: [0, 3, 255])
    func exitCodeIsReported(code: Int32) async throws {
        let child = try Self.shell("exit \(code)")
        #expect(await child.wait() == .exit(code))
        #expect(!child.isRunning)
        #expect(child.termination?.status == code)
    }

    @Test func aSignalThatEndsTheChildIsReportedAsASignal() async throws {
        let child = try Self.shell("kill -TERM $$; sleep 5")
        let watchdog = Self.watchdog(child)
        defer { watchdog.cancel() }
        let termination = await child.wait()
        #expect(termination == .signal(SIGTERM))
        #expect(termination.status == SIGTERM)
        #expect(!child.signal(SIGKILL), "a reaped child is never signalled")
    }

    /// 300 KB on standard error before 200 KB on standard output, both far beyond a pipe's buffer: a parent that read
    /// one stream to its end before the other would wait forever (until the watchdog).
    @Test func bothStreamsAreReadApartAndTogetherWithoutDeadlock() async throws {
        let child = try Self.shell("yes e | head -c 300000 >&2; yes o | head -c 200000")
        let watchdog = Self.watchdog(child)
        defer { watchdog.cancel() }
        let output = try await child.collectOutput()
        #expect(output.termination == .exit(0))
        #expect(output.standardError.count == 300_000 && output.standardOutput.count == 200_000)
        #expect(Set(output.standardError) == Set("e\n".utf8) && Set(output.standardOutput) == Set("o\n".utf8))
    }

    @Test func theLimitKeepsTheStartAndStillDrainsTheRest() throws {
        let child = try Self.shell("yes o | head -c 200000", standardError: .inherit)
        let output = try child.collectOutput(limit: 10)
        #expect(output.termination == .exit(0))
        #expect(output.standardOutput == Array("o\no\no\no\no\n".utf8))
    }

    @Test func standardErrorCanJoinStandardOutputInOrder() async throws {
        let pipe = try Self.shell("echo out; echo err >&2; echo again", standardError: .sameAsOutput)
        let joined = try await pipe.collectOutput()
        #expect(String(decoding: joined.standardOutput, as: UTF8.self) == "out\nerr\nagain\n")
        #expect(joined.standardError.isEmpty)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: file) }
        let written = try Self.shell(
            "echo out; echo err >&2", standardOutput: .file(file.path), standardError: .sameAsOutput)
        #expect(await written.wait() == .exit(0))
        #expect(try String(contentsOf: file, encoding: .utf8) == "out\nerr\n")
    }

    @Test func standardInputFromAPipe() throws {
        let child = try ChildProcess(executable: "/bin/cat", standardInput: .pipe, standardOutput: .pipe)
        let input = try #require(child.inputPipe)
        try input.write(Array("line one\nline two\n".utf8))
        input.close()
        let output = try child.collectOutput()
        #expect(output.termination == .exit(0))
        #expect(String(decoding: output.standardOutput, as: UTF8.self) == "line one\nline two\n")
    }

    @Test func theEnvironmentIsExactlyTheOneGiven() async throws {
        let given = try ChildProcess(
            executable: "/usr/bin/env", environment: ["ATTESTKIT_CHILD": "one", "SECOND": "two=2"],
            standardOutput: .pipe)
        let output = try await given.collectOutput()
        #expect(output.termination == .exit(0))
        let lines = String(decoding: output.standardOutput, as: UTF8.self).split(separator: "\n").sorted()
        #expect(lines == ["ATTESTKIT_CHILD=one", "SECOND=two=2"])

        // Without one, the parent's.
        let path = try #require(ProcessInfo.processInfo.environment["PATH"])
        let inherited = try ChildProcess(executable: "/usr/bin/env", standardOutput: .pipe)
        let parent = try await inherited.collectOutput()
        #expect(String(decoding: parent.standardOutput, as: UTF8.self).split(separator: "\n").contains("PATH=\(path)"))
    }

    @Test func aNameIsLookedUpInThePath() async throws {
        let child = try ChildProcess(executable: "sh", arguments: ["-c", "exit 7"])
        #expect(await child.wait() == .exit(7))
    }

    @Test func terminateEndsAChildPromptly() async throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["60"])
        let watchdog = Self.watchdog(child)
        defer { watchdog.cancel() }
        #expect(child.isRunning)
        child.terminate()
        #expect(await child.wait() == .signal(SIGTERM), "SIGKILL means the watchdog ended it, not terminate()")
        #expect(child.waitUntilExit() == .signal(SIGTERM))
    }

    /// A thread that blocks SIGTERM (as signal handling does) launches the child: the child does not inherit the mask.
    /// The child (`grep`) reads its own mask from `/proc/self/status`, so the answer does not hang on a signal's
    /// timing (a SIGTERM sent right after the spawn once went unanswered for the child's whole minute in a full run).
    @Test func theChildStartsWithNoSignalBlocked() async throws {
        let (child, launcherMask) = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                var blocked = sigset_t()
                sigemptyset(&blocked)
                sigaddset(&blocked, SIGTERM)
                var previous = sigset_t()
                pthread_sigmask(SIG_BLOCK, &blocked, &previous)
                defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
                let launcher = (try? String(contentsOfFile: "/proc/thread-self/status", encoding: .utf8)) ?? ""
                continuation.resume(
                    with: Result {
                        let child = try ChildProcess(
                            executable: "/bin/grep", arguments: ["^SigBlk:", "/proc/self/status"],
                            standardInput: .null, standardOutput: .pipe, standardError: .pipe)
                        return (child, Self.blockedMask(launcher))
                    })
            }
        }
        let watchdog = Self.watchdog(child)
        defer { watchdog.cancel() }
        // The launching thread did block SIGTERM (bit 15 of the mask): the setup is what the test says.
        #expect(launcherMask.map { $0 & (1 << (SIGTERM - 1)) != 0 } == true, "\(String(describing: launcherMask))")
        let output = try await child.collectOutput()
        #expect(output.termination == .exit(0))
        let childMask = Self.blockedMask(String(decoding: output.standardOutput, as: UTF8.self))
        #expect(childMask == 0, "\(String(decoding: output.standardOutput, as: UTF8.self))")
    }

    /// The `SigBlk` mask in a `/proc/…/status` text, or `nil`.
    private static func blockedMask(_ status: String) -> UInt64? {
        let line = status.split(separator: "\n").first { $0.hasPrefix("SigBlk:") }
        return line.flatMap { UInt64($0.dropFirst("SigBlk:".count).trimmingCharacters(in: .whitespaces), radix: 16) }
    }

    /// SIGTERM waits while the child is stopped, and ends it once SIGCONT resumes it.
    @Test func stopAndContinueReachTheChild() async throws {
        let child = try ChildProcess(executable: "/bin/sleep", arguments: ["60"])
        let watchdog = Self.watchdog(child)
        defer { watchdog.cancel() }
        #expect(child.signal(SIGSTOP))
        try await Task.sleep(for: .milliseconds(100))
        child.terminate()
        try await Task.sleep(for: .milliseconds(200))
        #expect(child.isRunning, "a stopped child does not act on SIGTERM")
        #expect(child.signal(SIGCONT))
        #expect(await child.wait() == .signal(SIGTERM))
    }

    @Test func aMissingExecutableThrowsNamingItAndTheError() throws {
        let path = "/nonexistent-\(UUID().uuidString)/attestkit"
        let error = try #require(throws: ChildProcess.Failure.self) { try ChildProcess(executable: path) }
        #expect(error.code == ENOENT)
        #expect(error.description.contains(path) && error.description.contains("No such file or directory"))

        #expect(throws: ChildProcess.Failure.self) { try ChildProcess(executable: "attestkit-no-such-program") }
        #expect(throws: ChildProcess.Failure.self) {
            try ChildProcess(executable: "/bin/sh", standardOutput: .sameAsOutput)
        }
    }

    /// A descriptor the parent opened without `O_CLOEXEC` (as a listening socket or another child's pipe end might
    /// be) is not in the child: only 0, 1, 2, and the one `ls` opens to read the directory.
    @Test func theChildInheritsNoDescriptorBeyondTheStandardThree() async throws {
        let descriptor = open("/dev/null", O_RDONLY)
        try #require(descriptor > 3)
        defer { close(descriptor) }
        #expect(fcntl(descriptor, F_GETFD) & FD_CLOEXEC == 0, "the parent's descriptor is inheritable")
        let child = try ChildProcess(executable: "/bin/ls", arguments: ["/dev/fd/"], standardOutput: .pipe)
        let output = try await child.collectOutput()
        #expect(output.termination == .exit(0))
        let listed = Set(String(decoding: output.standardOutput, as: UTF8.self).split(separator: "\n").map(String.init))
        #expect(!listed.contains(String(descriptor)))
        #expect(listed.isSuperset(of: ["0", "1", "2"]) && listed.count <= 4, "\(listed.sorted())")
    }
}
