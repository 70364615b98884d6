import ArgumentParser
import AttestKit
import AttestKitTesting
import Crypto
import Foundation

/// `attestkit simulate attestation`: a new key on a simulated device, attested by the software Apple.
struct SimulateAttestationCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attestation",
        abstract: "Attest a new key of a simulated device and write the attestation vector.",
        discussion: """
            --challenge TEXT makes clientDataHash = SHA-256(TEXT), Apple's documented rule; \
            --client-data-hash B64 passes the bytes as they are. With --state FILE the software Apple and the \
            device are read from FILE when it exists (created otherwise) and saved back.
            """
    )

    @Option(name: .long, help: "The App ID, TEAMID.bundle.id.")
    var appId: String

    @Option(name: .long, help: "production or development.", transform: SimulationArguments.environment)
    var environment: AppAttestEnvironment

    @Option(name: .long, help: "The server challenge (UTF-8); clientDataHash = SHA-256 of it.")
    var challenge: String?

    @Option(name: .long, help: "The exact clientDataHash bytes, Base64.")
    var clientDataHash: String?

    @Option(name: .long, help: "A simulator state file (TEST keys only), read if present and saved.")
    var state: String?

    @Option(name: .long, help: "Derive a new software Apple's keys from this text (repeatable roots' keys).")
    var seed: String?

    @Flag(name: .customLong("ios27"), help: "Simulate iOS 27: the authenticator data extension map and the 2026 EKU.")
    var iOS27 = false

    @OptionGroup var common: SimulationArguments

    func validate() throws {
        guard (challenge == nil) != (clientDataHash == nil) else {
            throw ValidationError("give exactly one of --challenge TEXT or --client-data-hash B64")
        }
    }

    func run() async throws {
        let time = try common.time()
        let appID = try AppID(appId)
        let device = try makeDevice(appID: appID, at: time)
        let challengeBytes = challenge.map { Array($0.utf8) }
        let hash: [UInt8]
        if let challengeBytes {
            hash = Array(SHA256.hash(data: challengeBytes))
        } else {
            guard let text = clientDataHash, let decoded = Base64.decode(text), !decoded.isEmpty else {
                throw ValidationError("--client-data-hash is not Base64")
            }
            hash = decoded
        }
        let keyID = device.generateKey()
        let object = try device.attestKey(keyID, clientDataHash: hash, fault: common.fault, at: time)
        if let state { try device.save(to: URL(fileURLWithPath: state)) }
        let vector = SimulatedVector.attestation(
            object, device: device, keyID: keyID, clientDataHash: hash, challenge: challengeBytes,
            fault: common.fault, at: time)
        try SimulationOutput(path: common.out).write(vector, apple: device.apple)
    }

    /// The state file's device (which must run the same app), or a new device with a new software Apple.
    private func makeDevice(appID: AppID, at time: Date) throws -> SimulatedDevice {
        if let state, FileManager.default.fileExists(atPath: state) {
            let device = try SimulatedDevice.load(from: URL(fileURLWithPath: state))
            guard device.configuration.appID == appID, device.configuration.environment == environment else {
                throw SimulationFailure(
                    "\(state) simulates \(device.configuration.appID) in \(device.configuration.environment.rawValue); "
                        + "use another --state file for another app or environment")
            }
            return device
        }
        let apple = try SoftwareApple(seed: seed.map { Array($0.utf8) }, at: time)
        return SimulatedDevice(
            apple: apple, configuration: .init(appID: appID, environment: environment, iOS27: iOS27))
    }
}
