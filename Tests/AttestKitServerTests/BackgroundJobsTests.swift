import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Crypto
import Testing

@testable import AttestKitServer

/// `background.jobs`: a replica that does not run the background jobs serves requests only, so that the jobs run
/// on the replicas chosen for them.
@Suite("Background jobs per replica")
struct BackgroundJobsTests {
    @Test("background.jobs=off: no receipt refresh and no cleanup run beside the listener; run (the default): both")
    func offSwitch() throws {
        let apple = try SoftwareApple()
        var configuration = ServerConfiguration(
            appIDs: [try AppID("\(Fixture.teamID).com.example.app")], environments: .development,
            storageURL: "memory:",
            apple: .init(
                privateKeyPEM: P256.Signing.PrivateKey().pemRepresentation, keyID: Fixture.appleKeyID,
                teamID: Fixture.teamID,
                deviceCheckBaseURL: "http://127.0.0.1:9", receiptExchangeURL: "http://127.0.0.1:9/v1/attestationData"),
            trustAnchors: apple.trustAnchors)
        let store = MemoryAttestationStore()
        let running = try AttestKitServer(configuration: configuration, store: store)
        #expect(running.backgroundServices.count == 2, "the challenge cleanup and the receipt refresh")
        configuration.runsBackgroundJobs = false
        let serving = try AttestKitServer(configuration: configuration, store: store)
        #expect(serving.backgroundServices.isEmpty)
        #expect(serving.application.backgroundServices.isEmpty)
    }

    @Test("background.jobs takes run or off, nothing else, naming the key")
    func refusedValue() async throws {
        let error = await #expect(throws: ServerConfigurationError.self) {
            _ = try await ServerConfigurationSource.load(environment: ["ATTESTKIT_BACKGROUND_JOBS": "sometimes"])
        }
        #expect(error?.key == "background.jobs", "\(String(describing: error))")
    }
}
