import AttestKit
import AttestKitServer
import AttestKitTesting
import Foundation

/// `attestkit serve` as a child process, trusting a software Apple, for `attestkit load`.
final class ChildServer: @unchecked Sendable {
    private let process = Process()
    private let portFile: URL
    /// The backend token the child accepts, random per run (never printed).
    let backendToken: String = {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16) }.joined()
    }()

    init(binary: String, workspace: URL, apple: SoftwareApple, appID: AppID, storage: String) throws {
        let attestationRoot = workspace.appendingPathComponent("attestation-root.pem")
        let receiptRoot = workspace.appendingPathComponent("receipt-root.pem")
        try Data(apple.attestationRootPEM.utf8).write(to: attestationRoot)
        try Data(apple.receiptRootPEM.utf8).write(to: receiptRoot)
        portFile = workspace.appendingPathComponent("port")
        process.executableURL = URL(fileURLWithPath: binary)
        // A PostgreSQL password goes to the child in its environment: `serve` refuses one on its command line.
        let (storage, password) = ServerConfigurationSource.splitStoragePassword(storage)
        process.arguments = [
            "serve", "--port", "0", "--port-file", portFile.path, "--storage", storage, "--app", appID.description,
            "--environments", "development", "--trust-attestation-root", attestationRoot.path,
            "--trust-receipt-root", receiptRoot.path, "--log-level", "error",
            "--set", "assertion.timestamp-window=3600", "--set", "rate-limit.attestations-per-ip=0",
            "--set", "rate-limit.challenges-per-ip=0", "--set", "shutdown.drain-period=0",
        ]
        var environment = ["ATTESTKIT_BACKEND_TOKENS": backendToken]
        if let password { environment["ATTESTKIT_STORAGE_PASSWORD"] = password }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    /// The port once the server wrote it (up to 60 s), or `nil` if it exited first.
    func waitForPort() async throws -> Int? {
        for _ in 0..<600 {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
            {
                return port
            }
            guard process.isRunning else {
                throw LoadFailure("attestkit serve exited with \(process.terminationStatus)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw LoadFailure("attestkit serve did not start within 60 s")
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
