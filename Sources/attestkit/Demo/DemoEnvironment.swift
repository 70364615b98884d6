import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitServer
import AttestKitTesting
import Crypto
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// What `attestkit demo` starts, and stops again: a software Apple, a mock of Apple's services on a free loopback
/// port, and an AttestKit server on another one with a temporary SQLite database.
///
/// ``withRunning(verbose:keep:_:)`` starts both services in their own `ServiceGroup`s, hands the running
/// environment to its body, then shuts both down gracefully and removes the temporary directory (unless kept),
/// whether the body succeeded, failed or threw.
struct DemoEnvironment: Sendable {
    /// The Team ID of the demo's provider key and apps.
    static let teamID = "DEMOTEAM01"
    /// The provider key's id (the JWT `kid`).
    static let providerKeyID = "DEMOKEY001"
    /// The app the server accepts.
    static let appID = demoAppID("com.example.demo")
    /// An app the server does not accept.
    static let otherAppID = demoAppID("com.example.other")
    /// The risk metric of the receipts the mock returns.
    static let riskMetric = 7
    /// The server's step-up threshold: a risk metric above it marks the key.
    static let riskThreshold = 5

    /// The software Apple that signs the simulated devices' attestations and the mock's receipts.
    let softwareApple: SoftwareApple
    /// The running server (its receipt refresher is driven by the demo).
    let server: AttestKitServer
    /// `http://127.0.0.1:PORT` of the server.
    let serverURL: String
    /// `http://127.0.0.1:PORT` of the mock.
    let mockURL: String
    /// The server's storage URL.
    let storageURL: String
    /// The temporary directory.
    let directory: URL
    /// The admin bearer token: random, never printed.
    let adminToken: String
    /// The backend bearer token: random, never printed.
    let backendToken: String

    /// SIGINT and SIGTERM stop both services gracefully: the remaining steps fail fast and the cleanup still runs.
    private static let signals: [UnixSignal] = [.sigint, .sigterm]

    /// Starts everything, runs `body`, and stops everything.
    ///
    /// - Parameters:
    ///   - verbose: Server and mock logs at debug level on standard error (else warnings only).
    ///   - keep: Keep the temporary directory.
    ///   - body: What to do while it runs.
    /// - Returns: What `body` returns.
    /// - Throws: What starting a service or `body` throws, once everything is stopped.
    static func withRunning<Value: Sendable>(
        verbose: Bool, keep: Bool, _ body: (DemoEnvironment) async throws -> Value
    ) async throws -> Value {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("attestkit-demo-\(UUID().uuidString)", isDirectory: true)
        defer { if !keep { try? FileManager.default.removeItem(at: directory) } }

        let logger = Self.logger("attestkit.demo", verbose: verbose)
        let softwareApple = try SoftwareApple()
        let providerKey = P256.Signing.PrivateKey()
        let mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: providerKey.publicKey.pemRepresentation, keyID: providerKeyID, teamID: teamID,
                environment: .development, riskMetric: riskMetric),
            softwareApple: softwareApple, logger: Self.logger("attestkit.demo.mock-apple", verbose: verbose))

        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            let mockGroup = ServiceGroup(
                configuration: .init(services: [mock], gracefulShutdownSignals: Self.signals, logger: logger))
            tasks.addTask { try await mockGroup.run() }
            var serverGroup: ServiceGroup?
            let outcome: Result<Value, any Error>
            do {
                let mockURL = try await mock.baseURL()
                // Created once the signal handlers are in place, so that SIGINT cannot leave it behind.
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let storageURL = "sqlite:" + directory.appendingPathComponent("demo.sqlite").path
                let adminToken = Self.randomToken()
                let backendToken = Self.randomToken()
                let server = try AttestKitServer(
                    configuration: Self.serverConfiguration(
                        mockURL: mockURL, storageURL: storageURL, providerKey: providerKey,
                        softwareApple: softwareApple, adminToken: adminToken, backendToken: backendToken,
                        verbose: verbose),
                    logger: Self.logger("attestkit.demo.server", verbose: verbose))
                let group = ServiceGroup(
                    configuration: .init(services: [server], gracefulShutdownSignals: Self.signals, logger: logger))
                serverGroup = group
                tasks.addTask { try await group.run() }
                let port = try await server.boundPort()
                let environment = DemoEnvironment(
                    softwareApple: softwareApple, server: server, serverURL: "http://127.0.0.1:\(port)",
                    mockURL: mockURL, storageURL: storageURL, directory: directory, adminToken: adminToken,
                    backendToken: backendToken)
                outcome = .success(try await body(environment))
            } catch {
                outcome = .failure(error)
            }
            // The server first (it calls the mock), then the mock.
            await serverGroup?.triggerGracefulShutdown()
            await mockGroup.triggerGracefulShutdown()
            do {
                try await tasks.waitForAll()
            } catch {
                if case .success = outcome { throw error }
            }
            return try outcome.get()
        }
    }

    /// The server's configuration: the software Apple's roots, development keys of ``appID``, the mock as Apple,
    /// an admin token, a backend token and a step-up threshold. The receipt refresher's own rounds are an hour apart: the demo
    /// runs one itself.
    private static func serverConfiguration(
        mockURL: String, storageURL: String, providerKey: P256.Signing.PrivateKey, softwareApple: SoftwareApple,
        adminToken: String, backendToken: String, verbose: Bool
    ) -> ServerConfiguration {
        ServerConfiguration(
            appIDs: [appID], environments: .development, host: "127.0.0.1", port: 0, storageURL: storageURL,
            apple: .init(
                privateKeyPEM: providerKey.pemRepresentation, keyID: providerKeyID, teamID: teamID,
                deviceCheckEnvironment: .development, deviceCheckBaseURL: mockURL,
                receiptExchangeURL: mockURL + AppAttestEnvironment.receiptExchangePath, timeout: 10),
            trustAnchors: softwareApple.trustAnchors,
            policy: .init(riskMetricThreshold: riskThreshold),
            adminToken: adminToken,
            backendTokens: [backendToken],
            logLevel: verbose ? .debug : .warning,
            logFormat: .text,
            receiptRefreshInterval: .seconds(3_600))
    }

    /// A text logger on standard error: debug when verbose, else warnings and worse.
    private static func logger(_ label: String, verbose: Bool) -> Logger {
        var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = verbose ? .debug : .warning
        return logger
    }

    /// 32 random bytes as hex.
    private static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    private static func demoAppID(_ bundleID: String) -> AppID {
        do {
            return try AppID(teamID: teamID, bundleID: bundleID)
        } catch {
            preconditionFailure("the demo's App ID is malformed: \(error)")
        }
    }
}
