import AttestKit
import AttestKitFlows
import AttestKitStore
import AttestKitTesting
import AttestKitWire
import Foundation
import Synchronization
import Testing

/// The attestation ramp's daily ceiling (#33) shared by replicas through the store: two applications on one store
/// (SQLite, PostgreSQL), asked at once, never admit more than the ceiling in a UTC day, and admit again the next.
@Suite("Attestation ramp ceiling, shared by replicas")
struct AttestationRampCeilingTests {
    /// A clock the test moves.
    final class TestClock: Sendable {
        let instant: Mutex<Date>
        init(_ date: Date) { instant = Mutex(date) }
        var now: Date { instant.withLock { $0 } }
        func set(_ date: Date) { instant.withLock { $0 = date } }
    }

    /// A replica: an application of the ramp `ramp` over `store`, on `clock`.
    static func replica(
        _ store: any AttestationStore, _ ramp: AttestationRamp, _ clock: TestClock
    ) throws -> AttestKitApplication {
        var configuration = AttestKitApplication.Configuration(
            appIDs: [EdgeFixture.appID], environments: .development, trustAnchors: EdgeFixture.apple.trustAnchors,
            rateLimits: .init(attestationsPerIP: 0, attestationsPerApp: 0, challengesPerIP: 0, authFailuresPerIP: 0))
        configuration.ramp = ramp
        return try AttestKitApplication(configuration: configuration, store: store, now: { clock.now })
    }

    /// A random key id, as an app generates one.
    static func keyID() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    /// Asks `count` attest challenges at once, alternating between `replicas`: how many were given, and the
    /// `Retry-After` seconds of the refusals (every refusal must be `attestation_deferred`).
    static func ask(_ count: Int, of replicas: [AttestKitApplication]) async throws -> (given: Int, waits: Set<Int>) {
        try await withThrowingTaskGroup(of: Int?.self) { group in
            for index in 0..<count {
                let replica = replicas[index % replicas.count]
                group.addTask {
                    do throws(FlowError) {
                        _ = try await replica.issueChallenge(
                            ChallengeRequest(purpose: "attest", keyId: keyID()), client: "10.0.0.\(index % 200)")
                        return nil
                    } catch {
                        guard error.code == .attestationDeferred, let wait = error.kind.retryAfter else { throw error }
                        return wait
                    }
                }
            }
            var result = (given: 0, waits: Set<Int>())
            for try await wait in group {
                if let wait { result.waits.insert(wait) } else { result.given += 1 }
            }
            return result
        }
    }

    @Test(
        "never more than the ceiling in a day across two replicas asked at once; the next day admits again",
        arguments: await Backend.available())
    func sharedCeiling(backend: Backend) async throws {
        try await backend.withStore { store in
            // 2026-11-27T18:00:00Z: six hours before the day ends.
            let evening = Date(timeIntervalSince1970: 1_795_802_400)
            let clock = TestClock(evening)
            let ramp = AttestationRamp(dailyCeiling: 7)
            let replicas = [try Self.replica(store, ramp, clock), try Self.replica(store, ramp, clock)]
            let first = try await Self.ask(40, of: replicas)
            #expect(first.given == 7)
            #expect(first.waits == [21_600], "until the next UTC day")
            // Later the same day: still none.
            clock.set(evening.addingTimeInterval(21_599))
            let later = try await Self.ask(4, of: replicas)
            #expect(later.given == 0 && later.waits == [1])
            // The next UTC day: the ceiling again, and no more.
            clock.set(evening.addingTimeInterval(21_600))
            let next = try await Self.ask(40, of: replicas)
            #expect(next.given == 7)
            #expect(next.waits == [86_400])
        }
    }
}
