import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

@testable import AttestKitServer

/// A scrape is answered while the store hangs, saying the store is down: the storage alert reads `/metrics`, and a
/// scrape that waited out the store's own deadline (10 seconds by default) would outlast Prometheus' scrape timeout
/// (also 10 seconds), leaving the alert blind for the whole outage.
@Suite("Metrics scrape with a hanging store")
struct MetricsScrapeBoundTests {
    @Test("GET /metrics answers with attestkit_storage_up 0 while the key counts hang", .timeLimit(.minutes(2)))
    func scrapeAnswersWhileTheStoreHangs() async throws {
        let store = CountingStore(
            MemoryAttestationStore(), beforeKeyCounts: { try? await Task.sleep(for: .seconds(60)) })
        let server = try AttestKitServer(
            configuration: ServerConfiguration(
                appIDs: [Fixture.appID], environments: .development, storageURL: "memory:",
                trustAnchors: Fixture.apple.trustAnchors, backendTokens: [Fixture.backendToken],
                logLevel: .critical),
            store: store, logger: DrainingTests.silent)
        try await Application(router: server.buildRouter()).test(.router) { client in
            let start = ContinuousClock.now
            try await client.execute(
                uri: "/metrics", method: .get, headers: [.authorization: "Bearer \(Fixture.backendToken)"]
            ) { response in
                #expect(response.status == .ok)
                let text = String(buffer: response.body)
                #expect(text.contains("\nattestkit_storage_up 0"), "\(text.prefix(2_000))")
            }
            // Answered, not hung: the store would have held it a minute.
            #expect(start.duration(to: .now) < .seconds(30))
        }
        #expect(store.calls("keyCounts") == 1)
    }
}
