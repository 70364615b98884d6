import AttestKit
import AttestKitStore
import Foundation
import Testing

/// A key's life after registration: its last use, the expiry of idle keys, which receipts the refresh trades, and
/// deletion with everything stored about the key.
@Suite("Key lifecycle")
struct KeyLifecycleTests {
    let t0 = TestKeys.t0
    let day: TimeInterval = 86_400

    @Test(
        "an accepted advance records its time as the key's last use; a refused one does not",
        arguments: await StoreBackend.all())
    func lastUse(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let registration = try TestKeys.registration()
            let registered = try await store.registerKey(registration, now: t0)
            #expect(registered.lastAssertionAt == nil && registered.lastUsedAt == t0)
            let advanced = try await store.advanceCounter(of: registration.keyID, to: 1, now: t0 + 10)
            #expect(advanced.lastAssertionAt == t0 + 10 && advanced.lastUsedAt == t0 + 10)
            #expect(try await store.key(registration.keyID)?.lastAssertionAt == t0 + 10)
            await #expect(throws: StoreError.counterNotIncreasing) {
                try await store.advanceCounter(of: registration.keyID, to: 1, now: t0 + 20)
            }
            await #expect(throws: StoreError.keyExpired) {
                try await store.advanceCounter(of: registration.keyID, to: 2, now: t0 + 30, usedSince: t0 + 11)
            }
            #expect(try await store.key(registration.keyID)?.lastAssertionAt == t0 + 10)
            #expect(try await store.key(registration.keyID)?.counter == 1)
        }
    }

    @Test(
        "a key unused since before the cutoff is refused with key_expired and never advances; registration is a use",
        arguments: await StoreBackend.all())
    func expiry(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let asserted = try TestKeys.registration()
            let fresh = try TestKeys.registration()
            let revoked = try TestKeys.registration()
            for registration in [asserted, fresh, revoked] { _ = try await store.registerKey(registration, now: t0) }
            try await store.advanceCounter(of: asserted.keyID, to: 1, now: t0 + day)
            _ = try await store.revokeKey(revoked.keyID, now: t0)

            // Used exactly at the cutoff: still alive. A key never asserted is used at its registration.
            try await store.advanceCounter(of: fresh.keyID, to: 1, now: t0 + 40 * day, usedSince: t0)
            await #expect(throws: StoreError.keyExpired) {
                try await store.advanceCounter(of: asserted.keyID, to: 2, now: t0 + 40 * day, usedSince: t0 + 2 * day)
            }
            // Expired whatever the counter (a replay of an expired key is expired too).
            await #expect(throws: StoreError.keyExpired) {
                try await store.advanceCounter(of: asserted.keyID, to: 1, now: t0 + 40 * day, usedSince: t0 + 2 * day)
            }
            let kept = try #require(try await store.key(asserted.keyID))
            #expect(kept.counter == 1 && kept.lastAssertionAt == t0 + day)
            // Revoked and unknown keys keep their codes.
            await #expect(throws: StoreError.keyRevoked) {
                try await store.advanceCounter(of: revoked.keyID, to: 1, now: t0 + 40 * day, usedSince: t0 + day)
            }
            await #expect(throws: StoreError.keyNotFound) {
                try await store.advanceCounter(of: TestKeys.key().keyID, to: 1, now: t0, usedSince: t0)
            }
            // Without a cutoff keys never expire.
            #expect(try await store.advanceCounter(of: asserted.keyID, to: 2, now: t0 + 400 * day).counter == 2)
        }
    }

    @Test("concurrent advances, combined or not, refuse exactly the expired keys", arguments: await StoreBackend.all())
    func expiryUnderLoad(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            var keys: [(KeyID, Bool)] = []
            for index in 0..<12 {
                let registration = try TestKeys.registration()
                _ = try await store.registerKey(registration, now: t0)
                let alive = index.isMultiple(of: 2)
                if alive { try await store.advanceCounter(of: registration.keyID, to: 1, now: t0 + 10 * day) }
                keys.append((registration.keyID, alive))
            }
            let outcomes = await withTaskGroup(of: (Bool, StoreError.Code?).self) { group in
                for (keyID, alive) in keys {
                    group.addTask {
                        let code = await outcome {
                            try await store.advanceCounter(of: keyID, to: 5, now: t0 + 20 * day, usedSince: t0 + day)
                        }
                        return (alive, code)
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(outcomes.count == 12)
            for (alive, code) in outcomes { #expect(code == (alive ? nil : .keyExpired)) }
            for (keyID, alive) in keys { #expect(try await store.key(keyID)?.counter == (alive ? 5 : 0)) }
        }
    }

    @Test(
        "the refresh claims only keys used recently whose receipts have not expired, and parks the others",
        arguments: await StoreBackend.all())
    func refreshSkipsIdleAndExpired(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let active = try TestKeys.registration(receiptRefreshAt: t0, receiptExpiresAt: t0 + 90 * day)
            let noExpiry = try TestKeys.registration(receiptRefreshAt: t0)
            let idle = try TestKeys.registration(receiptRefreshAt: t0, receiptExpiresAt: t0 + 90 * day)
            let expired = try TestKeys.registration(receiptRefreshAt: t0, receiptExpiresAt: t0)
            for registration in [active, noExpiry, expired] { _ = try await store.registerKey(registration, now: t0) }
            _ = try await store.registerKey(idle, now: t0 - 40 * day)
            #expect(try await store.key(active.keyID)?.receiptExpiresAt == t0 + 90 * day)

            let lease = Duration.seconds(600)
            let claim = try await store.claimReceiptRefreshBatch(
                now: t0, limit: 10, lease: lease, activeSince: t0 - 30 * day)
            let claimed = claim.keys
            #expect(Set(claimed.map(\.keyID)) == [active.keyID, noExpiry.keyID])
            // The parked keys count towards the batch: a claim limited to what it took has reached its limit.
            #expect(claim.parked == 2 && claim.taken == 4 && claim.reachedLimit(4) && !claim.reachedLimit(5))
            #expect(claimed.allSatisfy { $0.receiptRefreshAt == t0 + 600 })
            // Parked: the expired receipt for good, the idle key for a day.
            #expect(try await store.key(expired.keyID)?.receiptRefreshAt == nil)
            #expect(try await store.key(idle.keyID)?.receiptRefreshAt == t0 + day)
            #expect(try await store.claimReceiptRefresh(now: t0 + 1, limit: 10, lease: lease, activeSince: t0).isEmpty)

            // The idle key used again is traded once its pause ends; a new receipt's expiration is stored with it.
            try await store.advanceCounter(of: idle.keyID, to: 1, now: t0 + 3_600)
            let later = t0 + day
            let again = try await store.claimReceiptRefresh(
                now: later, limit: 10, lease: lease, activeSince: later - 30 * day)
            #expect(again.map(\.keyID).contains(idle.keyID))
            #expect(!again.map(\.keyID).contains(expired.keyID))
            let stored = try await store.storeReceipt(
                try TestKeys.receipt(at: day, riskMetric: 1, refreshAt: later, expiresAt: later), for: idle.keyID,
                now: later)
            #expect(stored.receiptExpiresAt == later)
            #expect(
                try await store.claimReceiptRefresh(
                    now: later, limit: 10, lease: lease, activeSince: later - 30 * day
                ).map(\.keyID) == [])
            #expect(try await store.key(idle.keyID)?.receiptRefreshAt == nil)
        }
    }

    @Test("deleting a key removes it with its risk history, and the counts drop", arguments: await StoreBackend.all())
    func delete(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let deleted = try TestKeys.registration()
            let revoked = try TestKeys.registration()
            let kept = try TestKeys.registration()
            for registration in [deleted, revoked, kept] { _ = try await store.registerKey(registration, now: t0) }
            _ = try await store.revokeKey(revoked.keyID, now: t0)
            for (offset, metric) in [(10.0, 3), (20.0, 5)] {
                for keyID in [deleted.keyID, kept.keyID] {
                    _ = try await store.storeReceipt(
                        try TestKeys.receipt(at: offset, riskMetric: metric), for: keyID, now: t0 + offset)
                }
            }
            #expect(try await store.keyCounts().total == 3)

            try await store.deleteKey(deleted.keyID)
            try await store.deleteKey(revoked.keyID)
            #expect(try await store.key(deleted.keyID) == nil)
            #expect(try await store.riskHistory(of: deleted.keyID, limit: 10).isEmpty)
            let counts = try await store.keyCounts()
            #expect(counts.total == 1 && counts.count(environment: .production, state: .revoked) == 0)
            await #expect(throws: StoreError.keyNotFound) { try await store.deleteKey(deleted.keyID) }
            await #expect(throws: StoreError.keyNotFound) {
                try await store.advanceCounter(of: deleted.keyID, to: 1, now: t0 + 30)
            }
            // The other key keeps its history; the deleted key may register again, with no history of its own.
            #expect(try await store.riskHistory(of: kept.keyID, limit: 10).map(\.riskMetric) == [5, 3])
            let again = try await store.registerKey(deleted, now: t0 + 40)
            #expect(again.counter == 0 && again.riskMetric == nil)
            #expect(try await store.riskHistory(of: deleted.keyID, limit: 10).isEmpty)
            #expect(try await store.keyCounts().total == 2)
        }
    }
}
