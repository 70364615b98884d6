import AttestKit
import AttestKitApple
import AttestKitAppleMock
import AttestKitFlows
import Crypto

/// Apple for the Vapor tests: a ``MockAppleServer`` on loopback checking provider tokens against a fresh P-256 key,
/// and Apple's clients (`AppleClients`) signing with that key and pointed at the mock, as the service's harness
/// (AttestKitServerTests' `ServerHarness`) builds them from `apple.*`.
enum VaporMockApple {
    static let keyID = "KEY1234567"
    static let teamID = "ABCDE12345"

    /// Runs `body` with the mock listening and Apple's clients aimed at it (DeviceCheck in the development
    /// environment), then stops the mock.
    static func with(_ body: (MockAppleServer, AppleClients) async throws -> Void) async throws {
        let key = P256.Signing.PrivateKey()
        let mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: key.publicKey.pemRepresentation, keyID: keyID, teamID: teamID,
                environment: .development),
            softwareApple: VaporBench.apple)
        try await mock.withRunning { baseURL in
            let tokens = try AppleTokenProvider(privateKeyPEM: key.pemRepresentation, keyID: keyID, teamID: teamID)
            let clients = AppleClients(
                deviceCheck: DeviceCheckClient(configuration: .init(baseURL: baseURL), tokens: tokens),
                deviceCheckEnvironment: .development)
            try await body(mock, clients)
        }
    }
}
