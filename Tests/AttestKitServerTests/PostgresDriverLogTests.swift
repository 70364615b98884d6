import AttestKit
import AttestKitStore
import AttestKitTestSupport
import Foundation
import Logging
import Testing

/// The PostgreSQL driver logs every message from the server at trace, the rows it returns included: a service run
/// at `log.level=trace` must still never log a key, a receipt or a challenge.
@Suite("PostgreSQL driver logs")
struct PostgresDriverLogTests {
    @Test(
        "at trace the store logs no row of the database (no key id, no challenge), and no driver message below debug",
        .enabled(PostgresAvailabilityTests.skipReason) { await PostgresTestServer.shared.shouldRun() })
    func noRowsAtTrace() async throws {
        guard await PostgresTestServer.shared.isAvailable() else { return }
        let capture = LogCapture()
        let schema = "t_log_\(UInt32.random(in: 0...UInt32.max))"
        let store = try PostgresAttestationStore(
            configuration: PostgresTestServer.configuration(schema: schema), logger: capture.logger(level: .trace))
        await PostgresTestServer.shared.gate.enter()
        let challenge = try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await store.run() }
            defer { group.cancelAll() }
            try await store.prepare()
            let challenge = try await store.issueChallenge(purpose: .attest, now: Date())
            _ = try await store.consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: Date())
            try? await store.dropSchema()
            await store.close()
            return challenge
        }
        await PostgresTestServer.shared.gate.leave()
        let hex = challenge.id.bytes.prefix(6).map { String(format: "%02x", $0) }.joined()
        for line in capture.logged {
            let text = "\(line.message) \(line.metadata)"
            #expect(line.level >= .debug, "\(text)")
            #expect(!text.lowercased().contains(hex), "\(text)")
        }
    }
}
