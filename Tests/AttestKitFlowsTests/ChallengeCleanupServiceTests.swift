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
        let clock = t0 + 60 + ChallengeCleanupService.clockMargin
        let service = ChallengeCleanupService(
            store: store, interval: .seconds(60), holder: "replica-a", logger: StoreLogging.silent, now: { clock })
        #expect(await service.round() == 3)
        #expect(try await store.closeDashboardSession(expired) == false)
        #expect(try await store.isDashboardSessionLive(live, now: clock))
        #expect(await service.round() == 0)
    }

    @Test("replicas sharing a store clean it up one at a time; another takes over once the holder stops renewing")
    func oneReplicaAtATime() async throws {
        let store = MemoryAttestationStore()
        let clock = Clock(t0)
        func service(_ holder: String) -> ChallengeCleanupService {
            ChallengeCleanupService(
                store: store, interval: .seconds(60), holder: holder, logger: StoreLogging.silent,
                now: { clock.now })
        }
        let (a, b) = (service("replica-a"), service("replica-b"))
        // A challenge expired long enough ago to be deleted (issued in the past).
        func expire() async throws {
            let issued = clock.now - ChallengeCleanupService.clockMargin - 2
            _ = try await store.issueChallenge(purpose: .attest, ttl: .seconds(1), now: issued)
            clock.now += 2
        }
        try await expire()
        #expect(await a.round() == 1)
        try await expire()
        #expect(await b.round() == 0, "replica-a holds the lease")
        #expect(await a.round() == 1, "its holder renews it")
        // replica-a stops; its lease (three intervals) runs out, then replica-b cleans up.
        clock.now += 179
        try await expire()
        #expect(await b.round() == 1)
        #expect(await a.round() == 0, "replica-b holds it now")
    }

    @Test("a replica whose clock runs ahead, holding the lease, deletes no used-token record the others still need")
    func clockAhead() async throws {
        let store = MemoryAttestationStore()
        // A token expiring at t0 + 60, used on a replica on time: its record is kept until then plus the leeway.
        #expect(try await store.consumeToken("jti", expiresAt: t0 + 60 + 60, now: t0))
        _ = try await store.issueChallenge(purpose: .attest, ttl: .seconds(60), now: t0)
        // Five minutes ahead, the other replica takes the lease (the first one's has passed by its clock) and cleans
        // up while the token is still valid on time.
        let ahead = ChallengeCleanupService(
            store: store, interval: .seconds(60), holder: "replica-ahead", logger: StoreLogging.silent,
            now: { [t0] in t0 + 30 + 300 })
        #expect(await ahead.round() == 0)
        // So the token cannot be used a second time on the replica on time.
        #expect(try await store.consumeToken("jti", expiresAt: t0 + 60 + 60, now: t0 + 30) == false)
        // Past the margin, it goes.
        let later = ChallengeCleanupService(
            store: store, interval: .seconds(60), holder: "replica-ahead", logger: StoreLogging.silent,
            now: { [t0] in t0 + 120 + ChallengeCleanupService.clockMargin })
        #expect(await later.round() == 2)
    }

    /// A clock the test moves.
    final class Clock: @unchecked Sendable {
        var now: Date
        init(_ now: Date) { self.now = now }
    }
}
