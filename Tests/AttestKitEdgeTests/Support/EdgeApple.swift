import AttestKit
import AttestKitAppleMock
import Crypto

/// Apple's DeviceCheck for an edge that validates DeviceCheck tokens: a ``MockAppleServer`` on loopback (backed by
/// the suite's software Apple), checking provider tokens signed with a fresh P-256 key whose PEM the edge is given.
struct EdgeApple: Sendable {
    /// The provider key's `kid`.
    static let keyID = "EDGE123456"
    /// The provider key's team (`iss`).
    static let teamID = "ABCDE12345"

    /// The mock; its `state` counts the validations Apple was asked for.
    let mock: MockAppleServer
    /// The `.p8` private key the edge signs provider tokens with. Never logged.
    let privateKeyPEM: String
    /// The mock's base URL (DeviceCheck's).
    let baseURL: String

    /// Runs `body` with a running mock when `enabled`, with `nil` otherwise; stops the mock afterwards.
    static func with<Result: Sendable>(
        _ enabled: Bool, _ body: (EdgeApple?) async throws -> Result
    ) async throws -> Result {
        guard enabled else { return try await body(nil) }
        let key = P256.Signing.PrivateKey()
        let mock = try MockAppleServer(
            configuration: .init(
                verificationKeyPEM: key.publicKey.pemRepresentation, keyID: keyID, teamID: teamID,
                environment: .development),
            softwareApple: EdgeFixture.apple)
        return try await mock.withRunning { baseURL in
            try await body(EdgeApple(mock: mock, privateKeyPEM: key.pemRepresentation, baseURL: baseURL))
        }
    }

    /// How many device tokens Apple was asked to validate.
    func validations() async -> Int {
        await mock.state.requestCount(.validateDeviceToken)
    }
}
