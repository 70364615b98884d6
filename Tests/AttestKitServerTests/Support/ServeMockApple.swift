import AttestKit
import AttestKitAppleMock
import AttestKitTesting
import Crypto
import Foundation

/// A mock of Apple's services for `attestkit serve` child processes: the running mock, a file with the Apple key
/// it checks provider tokens against, and the `serve` settings that point at both (DeviceCheck and the receipt
/// exchange, in the development environment).
struct ServeMockApple {
    /// The mock (its state counts requests and receipt trades).
    let mock: MockAppleServer
    private let keyFile: URL

    /// The team of the apps the mock serves.
    static let teamID = "ABCDE12345"
    /// The Apple key's identifier.
    static let keyID = "KEY1234567"

    /// A mock backed by `apple`, answering with `riskMetric`, with `faults` from the start; the key file goes in
    /// `workspace`.
    init(apple: SoftwareApple, riskMetric: Int = 1, faults: [MockAppleFault], workspace: URL) throws {
        let appleKey = P256.Signing.PrivateKey()
        mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: appleKey.publicKey.pemRepresentation, keyID: Self.keyID, teamID: Self.teamID,
                environment: .development, riskMetric: riskMetric, faults: faults),
            softwareApple: apple)
        keyFile = workspace.appendingPathComponent("apple-\(UUID().uuidString).p8")
        try Data(appleKey.pemRepresentation.utf8).write(to: keyFile)
    }

    /// The `serve` arguments of the Apple key and the mock's URLs (once the mock listens).
    func settings() async throws -> [String] {
        let base = try await mock.baseURL()
        return [
            "--set", "apple.key-file=\(keyFile.path)", "--set", "apple.key-id=\(Self.keyID)",
            "--set", "apple.team-id=\(Self.teamID)", "--set", "apple.devicecheck-environment=development",
            "--set", "apple.devicecheck-url=\(base)", "--set", "apple.receipt-url=\(base)/v1/attestationData",
        ]
    }

    /// Runs the mock around `body`.
    func running<Result: Sendable>(_ body: () async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await mock.run() }
            defer { group.cancelAll() }
            return try await body()
        }
    }
}
