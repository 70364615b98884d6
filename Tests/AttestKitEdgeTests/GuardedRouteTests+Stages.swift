import AttestKit
import AttestKitStore
import AttestKitTesting
import Crypto
import Foundation
import Testing

/// Stage separation at assertion time, on every edge and store: every edge is configured for
/// `ABCDE12345.com.example.app` in development; a key registered under another App ID or in production (registered
/// before the configuration changed: written to the store directly) is refused, and its counter stays.
extension GuardedRouteTests {
    /// A key of `appID` in `environment`, attested by the software Apple and written to `store` as a registration
    /// made under an earlier configuration.
    static func strandedDevice(
        _ store: any AttestationStore, appID: AppID, environment: AppAttestEnvironment
    ) async throws -> EdgeDevice {
        let device = SimulatedDevice(
            apple: EdgeFixture.apple, configuration: .init(appID: appID, environment: environment))
        let keyID = device.generateKey()
        _ = try device.attestKey(keyID, clientDataHash: Array(repeating: 7, count: 32))
        let publicKey = try #require(device.publicKey(for: keyID))
        _ = try await store.registerKey(
            KeyRegistration(
                keyID: keyID, publicKeyX963: Array(publicKey.x963Representation), appID: appID,
                environment: environment),
            now: Date())
        return EdgeDevice(device: device, keyID: keyID)
    }

    @Test(
        "a key the configuration no longer accepts 403 app_not_accepted / environment_not_accepted",
        arguments: await Edge.matrix())
    func stranded(edge: Edge, backend: Backend) async throws {
        try await edge.run(on: backend) { app in
            let cases: [(AppID, AppAttestEnvironment, String)] = [
                (try AppID("ABCDE12345.com.example.retired"), .development, "app_not_accepted"),
                (EdgeFixture.appID, .production, "environment_not_accepted"),
            ]
            for (appID, environment, code) in cases {
                let device = try await Self.strandedDevice(app.store, appID: appID, environment: environment)
                let answer = try await app.send(
                    "POST", "/orders", headers: try device.headers("POST", "/orders", body: Self.body), body: Self.body)
                #expect(answer.status == 403 && answer.code == code, "\(appID) \(environment): \(answer)")
                #expect(try await app.store.key(device.keyID)?.counter == 0)
            }
            // A key of the app as configured still passes.
            let current = try await EdgeDevice.registered(app)
            let answer = try await app.send(
                "POST", "/orders", headers: try current.headers("POST", "/orders", body: Self.body), body: Self.body)
            #expect(answer.status == 200, "\(answer)")
        }
    }
}
