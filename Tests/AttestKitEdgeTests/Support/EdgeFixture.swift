import AttestKit
import AttestKitTesting
import Foundation

/// The software Apple and the app whose devices the suite simulates.
enum EdgeFixture {
    static let apple: SoftwareApple = {
        do {
            return try SoftwareApple(seed: Array("AttestKitEdgeTests".utf8))
        } catch {
            preconditionFailure("cannot build the software Apple: \(error)")
        }
    }()

    static let appID: AppID = {
        do { return try AppID("ABCDE12345.com.example.app") } catch { preconditionFailure("\(error)") }
    }()
}

extension EdgeFixture {
    /// A debug token the suite's deployments accept when configured (`debug.tokens`: at least 32 characters).
    static let debugToken = "an-edge-debug-token-for-the-simulator-0001"

    /// A fresh DeviceCheck device token: standard Base64 of random bytes, like `DCDevice.generateToken()`'s.
    static func deviceToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<96).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }
}
