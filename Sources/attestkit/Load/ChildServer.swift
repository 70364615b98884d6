import AttestKit
import AttestKitServer
import AttestKitTesting
import Foundation

/// `attestkit serve` as a child process, trusting a software Apple, for `attestkit load`.
final class ChildServer: Sendable {
    private let process: ChildProcess
    private let portFile: URL
    /// The backend token the child accepts, random per run (never printed).
    let backendToken: String

    init(binary: String, workspace: URL, apple: SoftwareApple, appID: AppID, storage: String) throws {
        let attestationRoot = workspace.appendingPathComponent("attestation-root.pem")
        let receiptRoot = workspace.appendingPathComponent("receipt-root.pem")
        try Data(apple.attestationRootPEM.utf8).write(to: attestationRoot)
        try Data(apple.receiptRootPEM.utf8).write(to: receiptRoot)
        portFile = workspace.appendingPathComponent("port")
        var generator = SystemRandomNumberGenerator()
        let backendToken = (0..<32).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16) }
            .joined()
        self.backendToken = backendToken
        // A PostgreSQL password goes to the child in its environment: `serve` refuses one on its command line.
        let (storage, password) = ServerConfigurationSource.splitStoragePassword(storage)
        let arguments = [
            "serve", "--host", "127.0.0.1", "--port", "0", "--port-file", portFile.path, "--storage", storage,
            "--app", appID.description,
            "--environments", "development", "--trust-attestation-root", attestationRoot.path,
            "--trust-receipt-root", receiptRoot.path, "--log-level", "error",
            "--set", "assertion.timestamp-window=3600", "--set", "rate-limit.attestations-per-ip=0",
            "--set", "rate-limit.challenges-per-ip=0", "--set", "shutdown.drain-period=0",
        ]
        // The benchmark's own server, configured by these arguments alone: none of the caller's `ATTESTKIT_*` settings
        // (a container's `http.host` of 0.0.0.0, its secrets directory, a second listener) reaches it, but the
        // PostgreSQL password `load` reads itself.
        let inherited = ProcessInfo.processInfo.environment
        var environment = inherited.filter { !$0.key.hasPrefix("ATTESTKIT_") }
        if storage.hasPrefix("postgres"), let password = inherited["ATTESTKIT_STORAGE_PASSWORD"] {
            environment["ATTESTKIT_STORAGE_PASSWORD"] = password
        }
        environment["ATTESTKIT_BACKEND_TOKENS"] = backendToken
        if let password { environment["ATTESTKIT_STORAGE_PASSWORD"] = password }
        process = try ChildProcess(
            executable: URL(fileURLWithPath: binary).path, arguments: arguments, environment: environment,
            standardOutput: .null)
    }

    /// The port once the server wrote it (up to 60 s), or `nil` if it exited first.
    func waitForPort() async throws -> Int? {
        for _ in 0..<600 {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return port
            }
            if let termination = process.termination {
                throw LoadFailure("attestkit serve exited with \(termination.status)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LoadFailure("attestkit serve did not start within 60 s")
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
