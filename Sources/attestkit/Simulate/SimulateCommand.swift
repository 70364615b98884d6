import ArgumentParser

/// `attestkit simulate`: a software Apple on the command line, for testing a backend without a device.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Make attestations, assertions and receipts with a software Apple (test CA, never Apple's).",
        discussion: """
            Each subcommand writes a vector file (one JSON line, the schema of the conformance vectors) and \
            updates index.json in --out, with the simulator's attestation-root.pem and receipt-root.pem beside \
            them. Check them with: attestkit verify --jsonl FILE --attestation-root OUT/attestation-root.pem \
            --receipt-root OUT/receipt-root.pem, or attestkit verify --vectors OUT with the same roots.
            --state FILE keeps the software Apple and the device (TEST private keys only) between calls.
            """,
        subcommands: [
            SimulateDeviceCommand.self, SimulateAttestationCommand.self, SimulateAssertionCommand.self,
            SimulateReceiptRefreshCommand.self, SimulatePolicyVectorsCommand.self,
        ]
    )
}
