import ArgumentParser
import AttestKit
import AttestKitTesting
import Crypto
import Foundation

/// `attestkit simulate assertion`: an assertion by an attested key of a saved simulated device.
struct SimulateAssertionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "assertion",
        abstract: "Sign client data with an attested key of a saved device and write the assertion vector.",
        discussion: "The key's counter advances and is saved back to --state."
    )

    @Option(name: .long, help: "The simulator state file written by 'simulate attestation --state'.")
    var state: String

    @Option(name: .long, help: "The key identifier, Base64 (default: the newest key of the state).")
    var keyId: String?

    @Option(name: .long, help: "The client data to sign, as UTF-8 text.")
    var clientData: String?

    @Option(name: .customLong("client-data-b64"), help: "The client data to sign, Base64.")
    var clientDataBase64: String?

    @OptionGroup var common: SimulationArguments

    func validate() throws {
        guard (clientData == nil) != (clientDataBase64 == nil) else {
            throw ValidationError("give exactly one of --client-data TEXT or --client-data-b64 B64")
        }
        // An assertion holds no time (its counter orders it): the option would be taken and do nothing.
        guard common.at == nil else {
            throw ValidationError("an assertion carries no time: --at is for attestations and receipts")
        }
    }

    func run() async throws {
        let device = try SimulationArguments.loadDevice(state)
        let keyID = try SimulationArguments.keyID(keyId, of: device)
        let data: [UInt8]
        if let clientData {
            data = Array(clientData.utf8)
        } else {
            guard let text = clientDataBase64, let decoded = Base64.decode(text) else {
                throw ValidationError("--client-data-b64 is not Base64")
            }
            data = decoded
        }
        let previous = device.counter(for: keyID) ?? 0
        let object = try device.generateAssertion(
            keyID, clientDataHash: Array(SHA256.hash(data: data)), fault: common.fault)
        try device.save(to: URL(fileURLWithPath: state))
        let vector = SimulatedVector.assertion(
            object, device: device, keyID: keyID, clientData: data, previousCounter: previous, fault: common.fault)
        try SimulationOutput(path: common.out, json: common.json).write(vector, apple: device.apple)
    }
}
