import AttestKit
import AttestKitStore
import AttestKitTesting
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A child process consumes challenges and advances a counter in SQLite, printing a line after each
/// operation returned; it is killed with SIGKILL mid-run. After reopening, everything it reported is there.
@Suite("Durability")
struct DurabilityTests {
    let t0 = Date()

    @Test("SIGKILL mid-run loses no reported operation")
    func killedWorker() async throws {
        let worker = try #require(Self.workerURL(), "AttestKitStoreWorker was not built beside the tests")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.url.appendingPathComponent("durable.sqlite").path
        let registration = try TestKeys.registration()

        // The database, with a key and challenges for the worker.
        let store = SQLiteAttestationStore(path: path)
        _ = try await store.registerKey(registration, now: t0)
        var challenges: [StoredChallenge] = []
        for _ in 0..<400 {
            challenges.append(try await store.issueChallenge(purpose: .attest, ttl: .seconds(3_600), now: t0))
        }
        await store.close()
        let list = directory.url.appendingPathComponent("challenges.txt")
        try challenges.map(\.id.string).joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)

        let run = try await WorkerRun.start(
            worker, arguments: [path, list.path, registration.keyID.base64], killAfterAdvances: 150)
        #expect(run.killed, "the worker was not killed mid-run: \(run.errorOutput)")
        #expect(run.signal == SIGKILL)
        #expect(!run.lines.contains("done"))

        let advanced = run.lines.compactMap { line -> UInt32? in
            line.hasPrefix("advanced ") ? UInt32(line.dropFirst("advanced ".count)) : nil
        }
        let consumed = Set(
            run.lines.compactMap { line -> String? in
                line.hasPrefix("consumed ") ? String(line.dropFirst("consumed ".count)) : nil
            })
        let lastAdvance = try #require(advanced.max())
        #expect(lastAdvance >= 150)
        #expect(advanced == Array(1...lastAdvance))

        // Reopen: every reported advance and consumption is durable; nothing ran ahead of the last report.
        let reopened = SQLiteAttestationStore(path: path)
        let counter = try #require(try await reopened.key(registration.keyID)).counter
        #expect(counter >= lastAdvance)
        #expect(counter <= lastAdvance + 1, "at most the operation in flight at the kill is unreported")
        var consumedAgain = 0
        for (index, challenge) in challenges.enumerated() {
            if consumed.contains(challenge.id.string) {
                await #expect(throws: StoreError.challengeConsumed) {
                    _ = try await reopened.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: t0)
                }
                consumedAgain += 1
            } else if index > consumed.count {
                // Beyond the one in flight, the worker never touched these.
                _ = try await reopened.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: t0)
            }
        }
        #expect(consumedAgain == consumed.count)
        #expect(consumed.count >= 150)
        await reopened.close()
    }

    /// The worker binary, built by `swift build --build-tests` beside the test bundle, or from
    /// `ATTESTKIT_STORE_WORKER`.
    static func workerURL() -> URL? {
        if let path = ProcessInfo.processInfo.environment["ATTESTKIT_STORE_WORKER"] {
            return URL(fileURLWithPath: path)
        }
        let candidates = [
            Bundle.main.bundleURL,
            Bundle.main.executableURL?.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent(),
        ].compactMap { $0 }
        for directory in candidates {
            for url in [directory, directory.deletingLastPathComponent()] {
                let worker = url.appendingPathComponent("AttestKitStoreWorker")
                if FileManager.default.isExecutableFile(atPath: worker.path) { return worker }
            }
        }
        return nil
    }
}

/// One run of the worker: its lines, and how it ended.
struct WorkerRun: Sendable {
    var lines: [String]
    var killed: Bool
    var signal: Int32?
    var errorOutput: String

    /// Starts the worker, reads its lines as they come, and kills it with SIGKILL once it reported
    /// `killAfterAdvances` advances (or after 60 seconds). Reading runs on its own thread.
    static func start(_ executable: URL, arguments: [String], killAfterAdvances: Int) async throws -> WorkerRun {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    continuation.resume(returning: try run(executable, arguments, killAfterAdvances))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private static func run(_ executable: URL, _ arguments: [String], _ killAfterAdvances: Int) throws -> WorkerRun {
        let process = try ChildProcess(
            executable: executable.path, arguments: arguments, standardOutput: .pipe, standardError: .pipe)
        let watchdog = DispatchWorkItem { process.signal(SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
        guard let reader = process.outputPipe, let errors = process.errorPipe else {
            process.signal(SIGKILL)
            struct NoPipes: Error {}
            throw NoPipes()
        }

        var lines: [String] = []
        var pending = Data()
        var advances = 0
        var killed = false
        while true {
            let chunk = try reader.read()
            if chunk.isEmpty { break }
            pending.append(contentsOf: chunk)
            while let newline = pending.firstIndex(of: 0x0A) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                lines.append(line)
                if line.hasPrefix("advanced ") { advances += 1 }
            }
            if !killed, advances >= killAfterAdvances {
                process.signal(SIGKILL)
                killed = true
            }
        }
        let termination = process.waitUntilExit()
        watchdog.cancel()
        let errorOutput = String(decoding: try errors.readToEnd(), as: UTF8.self)
        var signal: Int32?
        if case .signal(let number) = termination { signal = number }
        return WorkerRun(lines: lines, killed: killed, signal: signal, errorOutput: errorOutput)
    }
}
