import ArgumentParser
import AttestKit
import AttestKitTesting
import Foundation

/// Options every `simulate` subcommand shares.
struct SimulationArguments: ParsableArguments {
    @Option(name: .long, help: "The directory to write the vector, index.json and the two root PEMs to.")
    var out: String

    @Option(name: .long, help: "The simulated time, ISO-8601 (default: now).")
    var at: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "A fault to build in.", discussion: SoftwareAppleFault.allCases.map(\.rawValue).joined(separator: ", ")),
        transform: SimulationArguments.fault)
    var fault: SoftwareAppleFault?

    @Flag(name: .long, help: "Print the vector as one JSON line on standard output instead of a summary.")
    var json = false

    /// Parses a fault name.
    static func fault(_ name: String) throws -> SoftwareAppleFault {
        guard let fault = SoftwareAppleFault(rawValue: name) else {
            let names = SoftwareAppleFault.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("unknown fault \(name); one of \(names)")
        }
        return fault
    }

    /// Parses an environment name.
    static func environment(_ name: String) throws -> AppAttestEnvironment {
        guard let environment = AppAttestEnvironment(rawValue: name) else {
            throw ValidationError("the environment is production or development, not \(name)")
        }
        return environment
    }

    /// `--at`, or now.
    func time() throws -> Date {
        guard let at else { return Date() }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = fractional.date(from: at) ?? ISO8601DateFormatter().date(from: at) else {
            throw ValidationError("--at is not an ISO-8601 time, e.g. 2026-04-21T12:00:00Z")
        }
        return date
    }

    /// The state file's device (which must run the same app in the same environment), or a new device with a new
    /// software Apple when there is no state file yet.
    static func device(
        state: String?, appID: AppID, environment: AppAttestEnvironment, seed: String?, iOS27: Bool, at time: Date
    ) throws -> SimulatedDevice {
        if let state, FileManager.default.fileExists(atPath: state) {
            let device = try readDevice(state)
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

    /// Loads the device of a state file.
    static func loadDevice(_ path: String) throws -> SimulatedDevice {
        guard FileManager.default.fileExists(atPath: path) else {
            throw SimulationFailure(
                "no state file at \(path): run 'attestkit simulate attestation --state \(path)' first")
        }
        return try readDevice(path)
    }

    /// The device of the state file at `path` (`--state`, `--device-state`), read as every file the command reads:
    /// bounded, so that a huge file, an endless FIFO or `/dev/zero` is a usage error instead of filling memory.
    static func readDevice(_ path: String) throws -> SimulatedDevice {
        try SimulatedDevice.load(InputFile.read(path, limit: SimulatedDevice.maximumStateBytes), readFrom: path)
    }

    /// The key `--key-id` names, or the newest key of the device.
    static func keyID(_ text: String?, of device: SimulatedDevice) throws -> KeyID {
        if let text { return try KeyID(string: text) }
        guard let newest = device.keyIDs.last else { throw SimulationFailure("the state holds no key") }
        return newest
    }
}

/// A `simulate` failure that is not about the arguments' syntax (printed without the usage text).
struct SimulationFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
