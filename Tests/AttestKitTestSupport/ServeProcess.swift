public import AttestKit
public import AttestKitTesting
public import Foundation

/// `attestkit serve` as a child process on loopback, trusting a software Apple, for tests that need the real
/// binary (several processes on one database, the app-side client against the service).
///
/// It listens on a free port (written to a port file), with rate limits off, no drain period (a test that drains sets
/// `shutdown.drain-period` in its arguments), logging only errors, and the software Apple's roots as trust anchors;
/// standard output is discarded and standard error goes to ``logFile`` (the service warns, loudly and on purpose,
/// that it trusts a test CA).
public final class ServeProcess: Sendable {
    /// A failure to start or reach the service.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong.
        public let description: String
    }

    /// The folder of the roots, the port file and a default SQLite store; removed by ``stop()``.
    public let workspace: URL
    private let process: ChildProcess
    private let portFile: URL
    /// The service's standard error (its log), in ``workspace``.
    public let logFile: URL

    /// The backend token every child process accepts (`ATTESTKIT_BACKEND_TOKENS`), unless the caller's environment
    /// sets another.
    public static let backendToken = "serve-process-backend-token-0123456789"

    /// `Authorization: Bearer` ``backendToken``, the header of backend routes.
    public static var backendAuthorization: String { "Bearer \(backendToken)" }

    /// The `attestkit` binary built beside the tests (`swift build --build-tests`).
    public static let binary: URL? = {
        let candidates = [
            Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ]
        return candidates.map { $0.appendingPathComponent("attestkit") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Starts the service.
    ///
    /// - Parameters:
    ///   - apple: The software Apple whose roots the service trusts.
    ///   - appID: The allowed app.
    ///   - storage: The storage URL; `nil` for SQLite in ``workspace``.
    ///   - arguments: More `serve` arguments.
    ///   - environment: More environment variables (for example `ATTESTKIT_ADMIN_TOKEN`).
    ///   - descriptorLimit: The soft and hard `RLIMIT_NOFILE` to start the service with (through `sh -c ulimit`);
    ///     `nil` inherits the test process's.
    public init(
        apple: SoftwareApple, appID: AppID, storage: String? = nil, arguments: [String] = [],
        environment: [String: String] = [:], descriptorLimit: (soft: Int, hard: Int)? = nil
    ) throws {
        guard let binary = Self.binary else {
            throw Failure(description: "the attestkit binary is not beside the tests: run `swift build --build-tests`")
        }
        workspace = FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        let attestationRoot = workspace.appendingPathComponent("attestation-root.pem")
        let receiptRoot = workspace.appendingPathComponent("receipt-root.pem")
        try Data(apple.attestationRootPEM.utf8).write(to: attestationRoot)
        try Data(apple.receiptRootPEM.utf8).write(to: receiptRoot)
        portFile = workspace.appendingPathComponent("port")
        var executable = binary.path
        // `serve` refuses a password on its command line: a PostgreSQL URL's goes in the environment.
        var storage = storage
        var environment = environment
        if let url = storage, var components = URLComponents(string: url), let password = components.password {
            components.password = nil
            storage = components.string
            environment["ATTESTKIT_STORAGE_PASSWORD"] = environment["ATTESTKIT_STORAGE_PASSWORD"] ?? password
        }
        var arguments =
            [
                "serve", "--port", "0", "--port-file", portFile.path,
                "--storage", storage ?? "sqlite:" + workspace.appendingPathComponent("attestkit.sqlite").path,
                "--app", appID.description, "--environments", "development",
                "--trust-attestation-root", attestationRoot.path, "--trust-receipt-root", receiptRoot.path,
                "--log-level", "error",
                "--set", "rate-limit.attestations-per-ip=0", "--set", "rate-limit.challenges-per-ip=0",
                "--set", "shutdown.drain-period=0",
            ] + arguments
        if let descriptorLimit {
            executable = "/bin/sh"
            arguments =
                [
                    "-c",
                    "ulimit -Sn \(descriptorLimit.soft) && ulimit -Hn \(descriptorLimit.hard) && exec \"$0\" \"$@\"",
                    binary.path,
                ] + arguments
        }
        logFile = workspace.appendingPathComponent("serve.log")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        process = try ChildProcess(
            executable: executable, arguments: arguments,
            environment: ProcessInfo.processInfo.environment
                .merging(["ATTESTKIT_BACKEND_TOKENS": Self.backendToken]) { $1 }
                .merging(environment) { $1 },
            standardOutput: .null, standardError: .file(logFile.path))
    }

    /// The process id of the service (of `sh` until it has replaced itself with the service).
    public var processIdentifier: Int32 { process.processIdentifier }

    /// The port once the service listens (within 60 s).
    public func port() async throws -> Int {
        for _ in 0..<600 {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return port
            }
            if let termination = process.termination {
                throw Failure(description: "serve exited: \(termination.status)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw Failure(description: "serve did not listen within 60 s")
    }

    /// `http://127.0.0.1:PORT` once the service listens.
    public func baseURL() async throws -> URL {
        guard let url = URL(string: "http://127.0.0.1:\(try await port())") else {
            throw Failure(description: "no URL for the port")
        }
        return url
    }

    /// Sends SIGTERM and waits up to `limit` for the service to exit; SIGKILL after that.
    /// - Returns: How long the service took to exit, or `nil` when it had to be killed.
    public func terminate(within limit: Duration) async -> Duration? {
        let start = ContinuousClock.now
        process.terminate()
        while process.isRunning {
            guard start.duration(to: .now) < limit else {
                process.signal(SIGKILL)
                process.waitUntilExit()
                return nil
            }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return start.duration(to: .now)
    }

    /// Sends `signal` (`SIGTERM`, `SIGINT`) to the service.
    public func signal(_ signal: Int32) {
        process.signal(signal)
    }

    /// Waits up to `limit` for the service to exit, without signalling it.
    /// - Returns: Its exit status (the signal's number when a signal ended it), or `nil` while it still runs.
    public func waitForExit(within limit: Duration) async -> Int32? {
        let start = ContinuousClock.now
        while process.isRunning {
            guard start.duration(to: .now) < limit else { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return process.termination?.status
    }

    /// Whether the service exited normally (not killed by a signal), once it has exited.
    public var exitedNormally: Bool {
        if case .exit = process.termination { true } else { false }
    }

    /// What the service has logged so far.
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Stops the service (SIGTERM, graceful) and removes ``workspace``.
    public func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: workspace)
    }
}
