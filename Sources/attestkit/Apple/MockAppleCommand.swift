import ArgumentParser
import AttestKit
import AttestKitAppleMock
import AttestKitTesting
import Crypto
import Foundation
import Logging
import ServiceLifecycle
import UnixSignals

/// `attestkit mock-apple`: Apple's DeviceCheck and receipt exchange, mocked on loopback.
struct MockAppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mock-apple",
        abstract: "Serve a mock of Apple's DeviceCheck and App Attest receipt exchange on loopback (for tests).",
        discussion: """
            It serves POST /v1/query_two_bits, /v1/update_two_bits, /v1/validate_device_token and \
            /v1/attestationData with Apple's quirks, checks provider tokens against the public half of \
            --key-file (or --public-key), and keeps bits in memory. --state FILE (from 'attestkit simulate \
            attestation --state FILE') lends it the software Apple that signed your receipts; without it a new \
            one is made and every receipt gets 404. Once listening it prints 'mock-apple listening on URL' (and \
            writes the port to --port-file); SIGINT or SIGTERM stops it.
            Faults: --fault ENDPOINT:ACTION[:COUNT], ENDPOINT query|update|validate|receipt|all, ACTION a status \
            (429, 503, ...), drop, delay=DURATION (2s, 500ms) or stall=DURATION (headers at once, the body that much \
            later), e.g. --fault query:429:2 --fault receipt:drop. \
            A status may carry a Retry-After header, sent as given: ENDPOINT:STATUS[:COUNT]:retry-after=VALUE, \
            e.g. --fault query:429:1:retry-after=2 or --fault 'all:503:retry-after=Sun, 12 Apr 2026 13:20:03 GMT'.
            """
    )

    @Option(name: .long, help: "The address to bind (loopback only, as a rule).")
    var host = "127.0.0.1"

    @Option(name: .long, help: "The port; 0 picks a free one.")
    var port = 0

    @Option(name: .long, help: "Write the bound port to this file once listening.")
    var portFile: String?

    @Option(name: .long, help: "The .p8 key whose public half verifies tokens (only the public half is used).")
    var keyFile: String?

    @Option(name: .long, help: "A PEM public key (P-256) that verifies tokens, instead of --key-file.")
    var publicKey: String?

    @Option(name: .long, help: "Require this 'kid' in tokens.")
    var keyId: String?

    @Option(name: .long, help: "Require this 'iss' (Team ID) in tokens.")
    var teamId: String?

    @Option(name: .long, help: "The environment the mock plays.", transform: SimulationArguments.environment)
    var environment: AppAttestEnvironment = .development

    @Option(name: .long, help: "A simulator state file whose software Apple signed the receipts to exchange.")
    var state: String?

    @Option(name: .long, help: "The risk metric of the receipts it returns.")
    var riskMetric = 1

    @Option(name: .long, help: "A fault: ENDPOINT:ACTION[:COUNT][:retry-after=VALUE] (repeatable).")
    var fault: [String] = []

    @Flag(name: .long, help: "Log one line per request (endpoint and status) to standard error.")
    var verbose = false

    func validate() throws {
        guard (keyFile == nil) != (publicKey == nil) else {
            throw ValidationError("give exactly one of --key-file P8 or --public-key PEM")
        }
        guard (0...65_535).contains(port) else { throw ValidationError("--port is 0 to 65535") }
    }

    func run() async throws {
        let faults = try fault.map { try MockAppleFault(parsing: $0) }
        let apple = try state.map { try SimulationArguments.readDevice($0).apple } ?? SoftwareApple()
        var logger = Logger(label: "attestkit.mock-apple")
        logger.logLevel = verbose ? .debug : .warning
        let mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: try verificationKey(), keyID: keyId, teamID: teamId, environment: environment,
                host: host, port: port, riskMetric: riskMetric, faults: faults),
            softwareApple: apple, logger: logger)
        let group = ServiceGroup(
            configuration: .init(services: [mock], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let bound = try await mock.port()
            if let portFile { try Data("\(bound)\n".utf8).write(to: URL(fileURLWithPath: portFile)) }
            FileHandle.standardOutput.write(Data("mock-apple listening on http://\(host):\(bound)\n".utf8))
            try await tasks.waitForAll()
        }
    }

    /// The PEM public key tokens must verify with: `--public-key`, or the public half of `--key-file`.
    private func verificationKey() throws -> String {
        if let publicKey { return try InputFile.text(publicKey) }
        guard let keyFile, let pem = try? InputFile.text(keyFile),
            let key = try? P256.Signing.PrivateKey(pemRepresentation: pem)
        else {
            throw AppleCommandFailure("--key-file is not a readable PEM P-256 private key (.p8)")
        }
        return key.publicKey.pemRepresentation
    }
}
