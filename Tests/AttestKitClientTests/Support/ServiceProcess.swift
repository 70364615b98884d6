import AttestKit
import AttestKitAppleMock
import AttestKitTestSupport
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// `attestkit serve` as a child process on loopback, with SQLite in a temporary directory, trusting a software
/// Apple; optionally with Apple's DeviceCheck pointed at an in-process mock, and with session tokens signed by a
/// key of the test.
enum ServiceProcess {
    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.client") } catch { fatalError("the test App ID is valid") }
    }()
    static let adminToken = "client-tests-admin-token-0123456789abcdef"

    /// Runs `body` with a started service, then stops it. `storage` is the storage URL (`nil`: SQLite of its own).
    static func with<Result>(
        apple: SoftwareApple, deviceCheckURL: String? = nil, appleKey: P256.Signing.PrivateKey? = nil,
        tokenKey: P256.Signing.PrivateKey? = nil, debugTokens: [String] = [], settings: [String] = [],
        storage: String? = nil, _ body: (URL) async throws -> Result
    ) async throws -> Result {
        var arguments = settings.flatMap { ["--set", $0] }
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey-\(UUID().uuidString).p8")
        defer { try? FileManager.default.removeItem(at: keyFile) }
        let tokenKeyFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tokens-\(UUID().uuidString).pem")
        defer { try? FileManager.default.removeItem(at: tokenKeyFile) }
        if let tokenKey {
            try Data(tokenKey.pemRepresentation.utf8).write(to: tokenKeyFile)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: tokenKeyFile.path)
            arguments += ["--set", "tokens.signing-key-file=\(tokenKeyFile.path)"]
        }
        if let deviceCheckURL, let appleKey {
            try Data(appleKey.pemRepresentation.utf8).write(to: keyFile)
            arguments += [
                "--apple-key-file", keyFile.path, "--apple-key-id", MockApple.keyID, "--apple-team-id",
                Self.appID.teamID, "--set", "apple.devicecheck-environment=development",
                "--set", "apple.devicecheck-url=\(deviceCheckURL)",
                "--set", "apple.receipt-url=\(deviceCheckURL)/v1/attestationData",
            ]
        }
        let service = try ServeProcess(
            apple: apple, appID: appID, storage: storage, arguments: arguments,
            environment: ["ATTESTKIT_ADMIN_TOKEN": adminToken].merging(
                debugTokens.isEmpty ? [:] : ["ATTESTKIT_DEBUG_TOKENS": debugTokens.joined(separator: ",")]
            ) { $1 })
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
