import ArgumentParser
import AttestKit
import AttestKitTesting
import Foundation

/// `attestkit simulate device`: a simulated device and its software Apple, saved before any key exists, so that a
/// service can be told to trust the software Apple's roots before the first attestation.
struct SimulateDeviceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "device",
        abstract: "Create a simulated device with a new software Apple, and write its two roots.",
        discussion: """
            Saves the device to --state (refused when the file exists for another app or environment; kept as it \
            is when it exists for this one) and writes attestation-root.pem and receipt-root.pem into --out, the \
            TEST roots to give 'attestkit serve --trust-attestation-root --trust-receipt-root'.
            """
    )

    @Option(name: .long, help: "The App ID, TEAMID.bundle.id.")
    var appId: String

    @Option(name: .long, help: "production or development.", transform: SimulationArguments.environment)
    var environment: AppAttestEnvironment

    @Option(name: .long, help: "The simulator state file to write (TEST keys only).")
    var state: String

    @Option(name: .long, help: "The directory to write attestation-root.pem and receipt-root.pem to.")
    var out: String

    @Option(name: .long, help: "Derive the software Apple's keys from this text (repeatable roots' keys).")
    var seed: String?

    @Flag(name: .customLong("ios27"), help: "Simulate iOS 27: the authenticator data extension map and the 2026 EKU.")
    var iOS27 = false

    func run() async throws {
        let appID = try AppID(validating: appId)
        let device = try SimulationArguments.device(
            state: state, appID: appID, environment: environment, seed: seed, iOS27: iOS27, at: Date())
        try device.save(to: URL(fileURLWithPath: state))
        let output = try SimulationOutput(path: out)
        try output.writeRoots(of: device.apple)
        print("device \(appID) in \(environment.rawValue): state \(state)")
        print("wrote \(output.directory.appendingPathComponent("attestation-root.pem").path), receipt-root.pem")
    }
}
