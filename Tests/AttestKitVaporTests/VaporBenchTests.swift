import AttestKit
import AttestKitStore
import AttestKitTestSupport
import Testing

/// The bench itself: what the Vapor tests leave behind.
@Suite("Vapor bench")
struct VaporBenchTests {
    @Test("a PostgreSQL application's schema is dropped at the end of the test, as the other suites' are")
    func schemaDropped() async throws {
        guard await VaporStoreKind.available().contains(.postgres) else { return }
        let schema = VaporStoreKind.freshSchema()
        var registered: KeyID?
        try await VaporBench.withApplication(on: .postgres, schema: schema) { app in
            registered = try await VaporBench.register(app).keyID
        }
        let keyID = try #require(registered)
        // A store on the same schema, not prepared: its tables went with the schema, so the key cannot be read.
        let gate = PostgresTestServer.shared.gate
        await gate.enter()
        let probe = try PostgresTestServer.store(schema: schema)
        let found = await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await probe.run() }
            let found: Bool
            do {
                found = try await probe.key(keyID) != nil
            } catch {
                found = false
            }
            try? await probe.dropSchema()
            await probe.close()
            group.cancelAll()
            return found
        }
        await gate.leave()
        #expect(!found, "the schema \(schema) and its key outlived the test")
    }
}
