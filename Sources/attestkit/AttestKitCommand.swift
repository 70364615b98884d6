import ArgumentParser

/// The `attestkit` command line.
@main
struct AttestKitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attestkit",
        abstract:
            "Verify Apple App Attest attestations, assertions and receipts; call Apple's DeviceCheck and receipt services.",
        version: AttestKitVersion.current,
        subcommands: [
            VerifyCommand.self, InspectCommand.self, BenchCommand.self, SimulateCommand.self, DeviceCheckCommand.self,
            ReceiptCommand.self, MockAppleCommand.self, DemoCommand.self, ServeCommand.self, LoadCommand.self,
            ReplayCommand.self, MigrateCommand.self,
        ]
    )
}
