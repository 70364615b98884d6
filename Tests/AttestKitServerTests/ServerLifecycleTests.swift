import AttestKit
import AttestKitServer
import AttestKitTesting
import Testing

/// The server's resources when it is not run the usual way.
@Suite struct ServerLifecycleTests {
    /// A server that is built but never run (a configuration check, a failed start-up) releases its HTTP client
    /// instead of trapping in AsyncHTTPClient's deinit check.
    @Test func serverThatNeverRunsIsReleasedCleanly() throws {
        let apple = try SoftwareApple()
        let server = try AttestKitServer(
            configuration: .init(
                appIDs: [try AppID("TEAMID1234.com.example.app")], environments: .development, storageURL: "memory:",
                trustAnchors: apple.trustAnchors))
        #expect(server.configuration.port == 8080)
    }
}
