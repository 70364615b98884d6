import AttestKit
import AttestKitTesting
import Foundation

/// What every end-to-end test shares: one software Apple (its CAs cost P-384 signatures), the App IDs and the
/// identifiers of the Apple key.
enum Fixture {
    static let teamID = "ABCDE12345"
    /// The `kid` of the server's Apple key.
    static let appleKeyID = "KEY1234567"
    static let adminToken = "e2e-admin-token-0123456789"
    /// The backend bearer token the harness sends to backend routes.
    static let backendToken = "e2e-backend-token-9876543210"

    /// The software Apple: CAs valid from a year before now to twenty years after.
    static let apple: SoftwareApple = {
        do {
            return try SoftwareApple(seed: Array("AttestKitServerTests".utf8))
        } catch {
            preconditionFailure("cannot build the software Apple: \(error)")
        }
    }()

    /// The app the server accepts.
    static let appID = makeAppID("\(teamID).com.example.app")
    /// An app of the same team that the server does not accept.
    static let otherAppID = makeAppID("\(teamID).com.example.stranger")

    private static func makeAppID(_ text: String) -> AppID {
        do { return try AppID(text) } catch { preconditionFailure("\(error)") }
    }

    /// A DeviceCheck device token: standard Base64 of random bytes, like `DCDevice.generateToken()`'s.
    static func deviceToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<96).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }
}
