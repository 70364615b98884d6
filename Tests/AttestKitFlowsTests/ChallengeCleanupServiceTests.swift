import AttestKitFlows
import AttestKitStore
import Foundation
import Testing

/// The periodic cleanup deletes what expired of every kind of short-lived record, the dashboard sessions included.
@Suite("Challenge cleanup")
struct ChallengeCleanupServiceTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("a round deletes expired challenges, token records and dashboard sessions, and nothing live")
    func round() async throws {
        let store = MemoryAttestationStore()
        _ = try await store.issueChallenge(purpose: .attest, ttl: .seconds(60), now: t0)
        _ = try await store.consumeToken("jti", expiresAt: t0 + 60, now: t0)
        let (expired, live) = ([UInt8](repeating: 1, count: 32), [UInt8](repeating: 2, count: 32))
        try await store.openDashboardSession(expired, expiresAt: t0 + 60, capacity: 32, now: t0)
        try await store.openDashboardSession(live, expiresAt: t0 + 3_600, capacity: 32, now: t0)
        let clock = t0 + 60
        let service = ChallengeCleanupService(
            store: store, interval: .seconds(60), logger: StoreLogging.silent, now: { clock })
        #expect(await service.round() == 3)
        #expect(try await store.closeDashboardSession(expired) == false)
        #expect(try await store.isDashboardSessionLive(live, now: clock))
        #expect(await service.round() == 0)
    }
}
