import ArgumentParser
import AttestKit
import AttestKitTesting
import Foundation

/// `attestkit simulate receipt-refresh`: the software Apple's answer to a receipt exchange.
struct SimulateReceiptRefreshCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipt-refresh",
        abstract: "Refresh a saved key's receipt into a RECEIPT with a risk metric and write the receipt vector.",
        discussion: """
            As Apple's endpoint: Not Before = creation + 1 day, expiration = creation + 90 days, and a RECEIPT \
            cannot be refreshed again before its Not Before (not_modified, Apple's 304; pass a later --at).
            """
    )

    @Option(name: .long, help: "The simulator state file written by 'simulate attestation --state'.")
    var state: String

    @Option(name: .long, help: "The key identifier, Base64 (default: the newest key of the state).")
    var keyId: String?

    @Option(name: .long, help: "The risk metric (field 17).")
    var riskMetric: Int = 1

    @OptionGroup var common: SimulationArguments

    func run() async throws {
        let time = try common.time()
        let device = try SimulationArguments.loadDevice(state)
        let keyID = try SimulationArguments.keyID(keyId, of: device)
        let receipt = try device.refreshReceipt(for: keyID, riskMetric: riskMetric, fault: common.fault, at: time)
        try device.save(to: URL(fileURLWithPath: state))
        let vector = SimulatedVector.receipt(receipt, device: device, keyID: keyID, fault: common.fault, at: time)
        try SimulationOutput(path: common.out, json: common.json).write(vector, apple: device.apple)
    }
}
