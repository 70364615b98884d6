import AttestKit
@testable import AttestKitStore
import Foundation
import Testing

@Suite("Keys")
struct KeyTests {
    let t0 = TestKeys.t0

    @Test("a key registers once, with every field, at counter 0", arguments: await StoreBackend.all())
    func register(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let registration = try TestKeys.registration(receiptRefreshAt: t0.addingTimeInterval(3600))
            let record = try await store.registerKey(registration, now: t0)
            #expect(record.keyID == registration.keyID)
            #expect(record.publicKeyX963 == registration.publicKeyX963)
            #expect(record.appID == TestKeys.appID)
            #expect(record.environment == .production)
            #expect(record.counter == 0)
            #expect(record.receipt == registration.receipt)
            #expect(record.receiptCreatedAt == t0.addingTimeInterval(-60))
            #expect(record.receiptRefreshAt == t0.addingTimeInterval(3600))
            #expect(record.riskMetric == nil)
            #expect(record.osVersion == "17.4")
            #expect(record.bundleVersion == "42")
            #expect(record.validationCategory == 1)
            #expect(record.createdAt == t0)
            #expect(record.state == .active)
            #expect(try await store.key(registration.keyID) == record)
            await #expect(throws: StoreError.keyExists) {
                _ = try await store.registerKey(registration, now: t0.addingTimeInterval(1))
            }
            #expect(try await store.key(TestKeys.key().keyID) == nil)
        }
    }

    @Test(
        "the key access control is stored with the key and read back by every read",
        arguments: await StoreBackend.all())
    func keyAccessControl(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let registration = try TestKeys.registration(keyAccessControl: TestKeys.macOSAccessControl)
            let record = try await store.registerKey(registration, now: t0)
            #expect(record.keyAccessControl == TestKeys.macOSAccessControl)
            #expect(record.keyAccessControlReading.accessControl?.isMacOSFullSecurityPolicy == true)
            #expect(try await store.key(registration.keyID)?.keyAccessControl == TestKeys.macOSAccessControl)
            let withoutReceipt = try await store.keyWithoutReceipt(registration.keyID)
            #expect(withoutReceipt?.keyAccessControl == TestKeys.macOSAccessControl)
            let advanced = try await store.advanceCounter(of: registration.keyID, to: 1, now: t0)
            #expect(advanced.keyAccessControl == TestKeys.macOSAccessControl)
            // None (a key attested before 2026) reads as absent; a malformed value is kept as signed.
            let none = try await store.registerKey(try TestKeys.registration(), now: t0)
            #expect(none.keyAccessControl == nil && none.keyAccessControlReading == .absent)
            let odd: [UInt8] = [0x30, 0x03, 0x04, 0x01, 0x00]
            let malformed = try await store.registerKey(try TestKeys.registration(keyAccessControl: odd), now: t0)
            #expect(try await store.key(malformed.keyID)?.keyAccessControlReading == .malformed(extensionValue: odd))
        }
    }

    @Test("a key access-control value that is empty or over the limit is refused before any store")
    func keyAccessControlLimits() throws {
        for value in [[], [UInt8](repeating: 0x30, count: StoreLimits.maximumKeyAccessControlBytes + 1)] {
            #expect(throws: StoreError.self) { try TestKeys.registration(keyAccessControl: value) }
        }
        _ = try TestKeys.registration(
            keyAccessControl: [UInt8](repeating: 0x30, count: StoreLimits.maximumKeyAccessControlBytes))
    }

    @Test("optional fields may be absent", arguments: await StoreBackend.all())
    func minimalRegistration(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let key = TestKeys.key()
            let registration = try KeyRegistration(
                keyID: key.keyID, publicKeyX963: key.publicKeyX963, appID: TestKeys.appID, environment: .development)
            let record = try await store.registerKey(registration, now: t0)
            #expect(record.receipt == nil && record.receiptCreatedAt == nil && record.osVersion == nil)
            #expect(record.bundleVersion == nil && record.validationCategory == nil && record.lastAssertionAt == nil)
            #expect(try await store.key(key.keyID) == record)
        }
    }

    @Test(
        "the request path's read and advance carry every field but the receipt's bytes",
        arguments: await StoreBackend.all())
    func requestPathLeavesTheReceiptOut(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let registration = try TestKeys.registration(receiptRefreshAt: t0.addingTimeInterval(3600))
            let registered = try await store.registerKey(registration, now: t0)
            #expect(registered.receipt != nil)
            var expected = registered
            expected.receipt = nil
            #expect(try await store.keyWithoutReceipt(registration.keyID) == expected)
            #expect(try await store.keyWithoutReceipt(TestKeys.key().keyID) == nil)
            let advanced = try await store.advanceCounter(of: registration.keyID, to: 3, now: t0.addingTimeInterval(5))
            expected.counter = 3
            expected.lastAssertionAt = t0.addingTimeInterval(5)
            #expect(advanced == expected)
            // The receipt itself is still stored, for the refresh and the key's reader.
            #expect(try await store.key(registration.keyID)?.receipt == registration.receipt)
        }
    }

    @Test("the counter advances only upwards", arguments: await StoreBackend.all())
    func advance(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let registration = try TestKeys.registration()
            let keyID = registration.keyID
            _ = try await store.registerKey(registration, now: t0)
            try await store.advanceCounter(of: keyID, to: 1, now: t0.addingTimeInterval(1))
            for replay: UInt32 in [1, 0] {
                await #expect(throws: StoreError.counterNotIncreasing) {
                    try await store.advanceCounter(of: keyID, to: replay, now: t0.addingTimeInterval(2))
                }
            }
            try await store.advanceCounter(of: keyID, to: 5, now: t0.addingTimeInterval(3))
            let record = try #require(try await store.key(keyID))
            #expect(record.counter == 5)
            #expect(record.lastAssertionAt == t0.addingTimeInterval(3))
            try await store.advanceCounter(of: keyID, to: .max, now: t0.addingTimeInterval(4))
            #expect(try await store.key(keyID)?.counter == .max)
            await #expect(throws: StoreError.counterNotIncreasing) {
                try await store.advanceCounter(of: keyID, to: .max, now: t0.addingTimeInterval(5))
            }
            await #expect(throws: StoreError.keyNotFound) {
                try await store.advanceCounter(of: TestKeys.key().keyID, to: 1, now: t0)
            }
        }
    }

    @Test("a revoked key stays, refuses advances and cannot be registered again", arguments: await StoreBackend.all())
    func revoke(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let registration = try TestKeys.registration()
            let keyID = registration.keyID
            _ = try await store.registerKey(registration, now: t0)
            let revoked = try await store.revokeKey(keyID, now: t0.addingTimeInterval(10))
            #expect(revoked.state == .revoked)
            #expect(revoked.revokedAt == t0.addingTimeInterval(10))
            #expect(
                try await store.revokeKey(keyID, now: t0.addingTimeInterval(20)).revokedAt == t0.addingTimeInterval(10))
            await #expect(throws: StoreError.keyRevoked) {
                try await store.advanceCounter(of: keyID, to: 1, now: t0.addingTimeInterval(30))
            }
            await #expect(throws: StoreError.keyRevoked) {
                _ = try await store.storeReceipt(try TestKeys.receipt(at: 100, riskMetric: 1), for: keyID, now: t0)
            }
            await #expect(throws: StoreError.keyExists) {
                _ = try await store.registerKey(registration, now: t0.addingTimeInterval(40))
            }
            await #expect(throws: StoreError.keyNotFound) {
                _ = try await store.revokeKey(TestKeys.key().keyID, now: t0)
            }
            #expect(try await store.key(keyID)?.counter == 0)
        }
    }

    @Test("newer receipts replace older ones and build the risk history", arguments: await StoreBackend.all())
    func receipts(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let registration = try TestKeys.registration()
            let keyID = registration.keyID
            _ = try await store.registerKey(registration, now: t0)
            let first = try TestKeys.receipt(at: 86_400, riskMetric: 3, refreshAt: t0.addingTimeInterval(2 * 86_400))
            let afterFirst = try await store.storeReceipt(first, for: keyID, now: t0.addingTimeInterval(86_401))
            #expect(afterFirst.receipt == first.receipt)
            #expect(afterFirst.receiptCreatedAt == t0.addingTimeInterval(86_400))
            #expect(afterFirst.receiptRefreshAt == t0.addingTimeInterval(2 * 86_400))
            #expect(afterFirst.riskMetric == 3)

            await #expect(throws: StoreError.receiptNotNewer) {
                _ = try await store.storeReceipt(first, for: keyID, now: t0.addingTimeInterval(86_402))
            }
            await #expect(throws: StoreError.receiptNotNewer) {
                _ = try await store.storeReceipt(try TestKeys.receipt(at: 10, riskMetric: 9), for: keyID, now: t0)
            }
            let withoutMetric = try await store.storeReceipt(
                try TestKeys.receipt(at: 2 * 86_400, riskMetric: nil), for: keyID,
                now: t0.addingTimeInterval(2 * 86_400))
            #expect(withoutMetric.riskMetric == 3)
            #expect(withoutMetric.receiptRefreshAt == nil)
            _ = try await store.storeReceipt(
                try TestKeys.receipt(at: 3 * 86_400, riskMetric: 7), for: keyID,
                now: t0.addingTimeInterval(3 * 86_400 + 5))

            let history = try await store.riskHistory(of: keyID, limit: 10)
            #expect(history.map(\.riskMetric) == [7, 3])
            #expect(history.first?.receiptCreatedAt == t0.addingTimeInterval(3 * 86_400))
            #expect(history.first?.recordedAt == t0.addingTimeInterval(3 * 86_400 + 5))
            #expect(try await store.riskHistory(of: keyID, limit: 1).map(\.riskMetric) == [7])
            #expect(try await store.riskHistory(of: TestKeys.key().keyID, limit: 10).isEmpty)
            #expect(try await store.key(keyID)?.riskMetric == 7)
            await #expect(throws: StoreError.keyNotFound) {
                _ = try await store.storeReceipt(first, for: TestKeys.key().keyID, now: t0)
            }
        }
    }

    @Test(
        "keys due for a receipt refresh are claimed: active, with a receipt, earliest first, each once until the lease",
        arguments: await StoreBackend.all())
    func claimForRefresh(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let soon = try TestKeys.registration(receiptRefreshAt: t0.addingTimeInterval(3_600))
            let later = try TestKeys.registration(receiptRefreshAt: t0.addingTimeInterval(7_200))
            let never = try TestKeys.registration(receiptRefreshAt: nil)
            let revoked = try TestKeys.registration(receiptRefreshAt: t0)
            for registration in [soon, later, never, revoked] { _ = try await store.registerKey(registration, now: t0) }
            _ = try await store.revokeKey(revoked.keyID, now: t0)
            let lease = Duration.seconds(3_600)
            func claim(at offset: TimeInterval, limit: Int = 10) async throws -> [KeyRecord] {
                try await store.claimReceiptRefresh(
                    now: t0.addingTimeInterval(offset), limit: limit, lease: lease, activeSince: t0)
            }

            #expect(try await claim(at: 3_599).isEmpty)
            let first = try await claim(at: 5_400)
            #expect(first.map(\.keyID) == [soon.keyID])
            #expect(first.first?.receiptRefreshAt == t0.addingTimeInterval(9_000))
            #expect(try await store.key(soon.keyID)?.receiptRefreshAt == t0.addingTimeInterval(9_000))
            // Claimed: no other claimer gets it while the lease runs.
            #expect(try await claim(at: 5_400).isEmpty)
            #expect(try await claim(at: 7_200, limit: 1).map(\.keyID) == [later.keyID])
            #expect(try await claim(at: 8_999).isEmpty)
            // A claim nobody finished (its holder crashed) is due again once the lease passes.
            #expect(try await claim(at: 9_000).map(\.keyID) == [soon.keyID])
            // Finishing a claim (storing the receipt or postponing the key) sets the next refresh time.
            try await store.postponeReceiptRefresh(of: soon.keyID, until: nil)
            try await store.postponeReceiptRefresh(of: later.keyID, until: t0.addingTimeInterval(20_000))
            #expect(try await claim(at: 19_999).isEmpty)
            #expect(try await claim(at: 20_000).map(\.keyID) == [later.keyID])
            await #expect(throws: StoreError.keyNotFound) {
                try await store.postponeReceiptRefresh(of: TestKeys.key().keyID, until: t0)
            }
            for limit in [0, StoreLimits.maximumListLimit + 1] {
                await #expect(throws: StoreError.invalidInput) {
                    _ = try await store.claimReceiptRefresh(now: t0, limit: limit, lease: lease, activeSince: t0)
                }
            }
            for lease in [Duration.zero, .milliseconds(999), .seconds(86_401)] {
                await #expect(throws: StoreError.invalidInput) {
                    _ = try await store.claimReceiptRefresh(now: t0, limit: 1, lease: lease, activeSince: t0)
                }
            }
        }
    }

    @Test(
        "the receipt refresh backlog: the keys a claim would take, counted up to a cap, and the oldest due time",
        arguments: await StoreBackend.all())
    func receiptRefreshBacklog(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            #expect(try await store.receiptRefreshBacklog(now: t0, countingUpTo: 10) == .init(due: 0, oldestDue: nil))
            for offset: TimeInterval in [-50, -3_600, -10, 0, 60] {
                let registration = try TestKeys.registration(receiptRefreshAt: t0.addingTimeInterval(offset))
                _ = try await store.registerKey(registration, now: t0)
            }
            _ = try await store.registerKey(try TestKeys.registration(receiptRefreshAt: nil), now: t0)
            let revoked = try TestKeys.registration(receiptRefreshAt: t0.addingTimeInterval(-86_400))
            _ = try await store.registerKey(revoked, now: t0)
            _ = try await store.revokeKey(revoked.keyID, now: t0)

            let oldest = t0.addingTimeInterval(-3_600)
            let backlog = try await store.receiptRefreshBacklog(now: t0, countingUpTo: 10)
            #expect(backlog == .init(due: 4, oldestDue: oldest))
            let capped = try await store.receiptRefreshBacklog(now: t0, countingUpTo: 3)
            #expect(capped == .init(due: 3, oldestDue: oldest))
            #expect(
                try await store.receiptRefreshBacklog(now: t0.addingTimeInterval(-20), countingUpTo: 10)
                    == .init(due: 2, oldestDue: oldest))
            // Claimed keys are no longer due (until their lease passes).
            _ = try await store.claimReceiptRefresh(now: t0, limit: 2, lease: .seconds(60), activeSince: t0.addingTimeInterval(-86_400))
            #expect(
                try await store.receiptRefreshBacklog(now: t0, countingUpTo: 10)
                    == .init(due: 2, oldestDue: t0.addingTimeInterval(-10)))
            for cap in [0, 10_000_001] {
                await #expect(throws: StoreError.invalidInput) {
                    _ = try await store.receiptRefreshBacklog(now: t0, countingUpTo: cap)
                }
            }
        }
    }

    @Test("counts by environment and state", arguments: await StoreBackend.all())
    func counts(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            #expect(try await store.keyCounts().total == 0)
            var production: [KeyRegistration] = []
            for _ in 0..<3 { production.append(try TestKeys.registration(environment: .production)) }
            for registration in production { _ = try await store.registerKey(registration, now: t0) }
            for _ in 0..<2 {
                _ = try await store.registerKey(try TestKeys.registration(environment: .development), now: t0)
            }
            _ = try await store.revokeKey(production[0].keyID, now: t0)

            let counts = try await store.keyCounts()
            #expect(counts.count(environment: .production, state: .active) == 2)
            #expect(counts.count(environment: .production, state: .revoked) == 1)
            #expect(counts.count(environment: .development, state: .active) == 2)
            #expect(counts.count(environment: .development, state: .revoked) == 0)
            #expect(counts.count(state: .active) == 4)
            #expect(counts.total == 5)
            #expect(
                counts.description
                    == "production/active=2 production/revoked=1 development/active=2 development/revoked=0")
        }
    }

    @Test("state survives closing and reopening the database", arguments: await StoreBackend.durable())
    func reopen(backend: StoreBackend) async throws {
        try await backend.withStores(count: 2) { stores in
            let registration = try TestKeys.registration()
            _ = try await stores[0].registerKey(registration, now: t0)
            try await stores[0].advanceCounter(of: registration.keyID, to: 9, now: t0)
            let challenge = try await stores[0].issueChallenge(purpose: .attest, now: t0)
            await stores[0].close()
            await #expect(throws: StoreError.storageUnavailable) {
                _ = try await stores[0].key(registration.keyID)
            }
            #expect(try await stores[1].key(registration.keyID)?.counter == 9)
            _ = try await stores[1].consumeChallenge(challenge.id, purpose: .attest, keyID: nil, now: t0)
        }
    }

    @Test("the description shows no key material")
    func description() async throws {
        let registration = try TestKeys.registration()
        let record = try await MemoryAttestationStore().registerKey(registration, now: t0)
        for secret in [registration.keyID.base64, Data(registration.publicKeyX963).base64EncodedString()] {
            #expect(!record.description.contains(secret))
        }
        #expect(record.description.contains("ABCDE12345.com.example.app"))
    }
}
