import AttestKit
import AttestKitAppleMock
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// `attestkit serve` as a child process on loopback, with SQLite in a temporary directory, trusting a software
/// Apple; optionally with Apple's DeviceCheck pointed at an in-process mock.
final class ServiceProcess: @unchecked Sendable {
    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.client") } catch { fatalError("the test App ID is valid") }
    }()
    static let adminToken = "client-tests-admin-token-0123456789abcdef"

    let workspace: URL
    let apple: SoftwareApple
    private let process = Process()
    private let portFile: URL

    static let binary: URL? = {
        let candidates = [
            Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent(),
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        ]
        return candidates.map { $0.appendingPathComponent("attestkit") }
            .first { FileManager.default.isExecutableFile(atPath: $0.path) }
    }()

    /// Starts the service.
    /// - Parameter deviceCheckURL: The base URL of a mock of Apple's DeviceCheck, or `nil` for no Apple key.
    init(apple: SoftwareApple, deviceCheckURL: String? = nil, appleKey: P256.Signing.PrivateKey? = nil) throws {
        struct MissingBinary: Error {}
        guard let binary = Self.binary else {
            Issue.record("the attestkit binary is not beside the tests: run `swift build --build-tests` first")
            throw MissingBinary()
        }
        self.apple = apple
        workspace = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        let attestationRoot = workspace.appendingPathComponent("attestation-root.pem")
        let receiptRoot = workspace.appendingPathComponent("receipt-root.pem")
        try Data(apple.attestationRootPEM.utf8).write(to: attestationRoot)
        try Data(apple.receiptRootPEM.utf8).write(to: receiptRoot)
        portFile = workspace.appendingPathComponent("port")
        var arguments = [
            "serve", "--port", "0", "--port-file", portFile.path,
            "--storage", "sqlite:" + workspace.appendingPathComponent("attestkit.sqlite").path,
            "--app", Self.appID.description, "--environments", "development",
            "--trust-attestation-root", attestationRoot.path, "--trust-receipt-root", receiptRoot.path,
            "--log-level", "error",
            "--set", "rate-limit.attestations-per-ip=0", "--set", "rate-limit.challenges-per-ip=0",
        ]
        if let deviceCheckURL, let appleKey {
            let keyFile = workspace.appendingPathComponent("AuthKey.p8")
            try Data(appleKey.pemRepresentation.utf8).write(to: keyFile)
            arguments += [
                "--apple-key-file", keyFile.path, "--apple-key-id", MockApple.keyID, "--apple-team-id",
                Self.appID.teamID, "--set", "apple.devicecheck-environment=development",
                "--set", "apple.devicecheck-url=\(deviceCheckURL)",
                "--set", "apple.receipt-url=\(deviceCheckURL)/v1/attestationData",
            ]
        }
        process.executableURL = binary
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["ATTESTKIT_ADMIN_TOKEN"] = Self.adminToken
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        // The service warns, on purpose loudly, that it trusts a test CA: keep that out of the test output.
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// `http://127.0.0.1:PORT` once the service listens.
    func baseURL() async throws -> URL {
        struct NotListening: Error, CustomStringConvertible { let description: String }
        for _ in 0..<600 {
            if let text = try? String(contentsOf: portFile, encoding: .utf8),
                let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                let url = URL(string: "http://127.0.0.1:\(port)")
            {
                return url
            }
            guard process.isRunning else {
                throw NotListening(description: "serve exited: \(process.terminationStatus)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw NotListening(description: "serve did not listen within 60 s")
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: workspace)
    }

    /// Runs `body` with a started service, then stops it.
    static func with<Result>(
        apple: SoftwareApple, deviceCheckURL: String? = nil, appleKey: P256.Signing.PrivateKey? = nil,
        _ body: (URL) async throws -> Result
    ) async throws -> Result {
        let service = try ServiceProcess(apple: apple, deviceCheckURL: deviceCheckURL, appleKey: appleKey)
        defer { service.stop() }
        return try await body(try await service.baseURL())
    }
}

/// The in-process mock of Apple's DeviceCheck the service calls in the fallback test.
enum MockApple {
    static let keyID = "ABC123DEFG"

    /// Runs `body` with a mock of Apple's services and the key the service signs its provider tokens with.
    static func with<Result: Sendable>(
        apple: SoftwareApple, _ body: (String, P256.Signing.PrivateKey) async throws -> Result
    ) async throws -> Result {
        let key = P256.Signing.PrivateKey()
        let mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: key.publicKey.pemRepresentation, keyID: keyID,
                teamID: ServiceProcess.appID.teamID, environment: .development),
            softwareApple: apple)
        return try await mock.withRunning { baseURL in try await body(baseURL, key) }
    }
}
