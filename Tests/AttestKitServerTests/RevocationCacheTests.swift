import AttestKit
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import Foundation
import Testing

/// The caches of the assertion path (parsed public keys, the gate's keys) hide nothing: the key's state is decided by
/// the store in the statement that advances the counter, and the accepted key is the row it returned, so the first
/// request after a revocation is refused and a new risk metric shows at once, whoever changed the store.
@Suite("Revocation despite the key cache")
struct RevocationCacheTests {
    @Test(
        "a key verified many times (its public key cached) is refused by the very next request after revocation",
        arguments: await StoreKind.all())
    func revokedAtOnce(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let other = try await TestDevice.registered(harness)
            for _ in 0..<5 {
                let accepted = try await device.verify(try device.verifyBody(freshness: device.now))
                #expect(accepted.status == 200, "\(accepted)")
            }
            // Signed before the revocation, sent after it.
            let pending = try device.verifyBody(freshness: device.now)
            let revoked = try await harness.post(
                "/v1/keys/\(device.keyID.pathComponent)/revoke", .raw(""), headers: ServerHarness.admin)
            #expect(revoked.status == 200, "\(revoked)")
            let refused = try await device.verify(pending)
            #expect(refused.status == 403 && refused.errorCode == "key_revoked", "\(refused)")
            let later = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(later.status == 403 && later.errorCode == "key_revoked", "\(later)")
            // Another key, cached too, is not affected.
            let unaffected = try await other.verify(try other.verifyBody(freshness: other.now))
            #expect(unaffected.status == 200, "\(unaffected)")
            let record = try #require(try await harness.store.key(device.keyID))
            #expect(record.counter == 5)
        }
    }

    @Test(
        "a revocation made by another replica (straight in the store) refuses the next request of a cached key",
        arguments: await StoreKind.all())
    func revokedElsewhere(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            for _ in 0..<3 {
                let accepted = try await device.verify(try device.verifyBody(freshness: device.now))
                #expect(accepted.status == 200, "\(accepted)")
            }
            _ = try await harness.store.revokeKey(device.keyID, now: harness.clock.now())
            let refused = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(refused.status == 403 && refused.errorCode == "key_revoked", "\(refused)")
            #expect(try await harness.store.key(device.keyID)?.counter == 3)
        }
    }

    @Test(
        "a risk metric stored by another replica after the key was cached shows in the very next answer",
        arguments: await StoreKind.all())
    func riskSeenAtOnce(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.policy.riskMetricThreshold = 5
        try await ServerHarness.with(kind, options) { harness in
            let device = try await TestDevice.registered(harness)
            let before = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(before.status == 200 && before.bool("stepUp") == false, "\(before)")
            let update = try ReceiptUpdate(
                receipt: Array(repeating: 0x30, count: 64),
                receiptCreatedAt: harness.clock.now().addingTimeInterval(60),
                riskMetric: 9, receiptRefreshAt: nil)
            _ = try await harness.store.storeReceipt(update, for: device.keyID, now: harness.clock.now())
            let after = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(after.status == 200, "\(after)")
            #expect(after.int("riskMetric") == 9)
            #expect(after.bool("stepUp") == true)
        }
    }
}
