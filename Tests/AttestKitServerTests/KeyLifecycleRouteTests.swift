import AttestKit
import AttestKitAppleMock
import AttestKitFlows
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import Foundation
import NIOHTTP1
import Testing

/// A key's life through the service: an idle key's assertions refused (`keys.expire-after`), the receipt refresh
/// trading only the receipts of keys in use, and the operator's deletion of a key with its data.
@Suite("Key lifecycle through the service")
struct KeyLifecycleRouteTests {
    static let day: TimeInterval = 86_400

    @Test(
        "keys.expire-after: a key unused for longer answers 403 key_expired, shows state expired; use keeps it alive",
        arguments: await StoreKind.all())
    func expiry(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        options.keyExpiry = 7 * Self.day
        try await ServerHarness.with(kind, options) { harness in
            let device = try await TestDevice.registered(harness)
            let idle = try await TestDevice.registered(harness)
            // Registration is a use; each accepted assertion is one.
            for _ in 0..<2 {
                harness.clock.advance(by: 6 * Self.day)
                let accepted = try await device.verify(try device.verifyBody(freshness: device.now))
                #expect(accepted.status == 200, "\(accepted)")
            }
            let refused = try await idle.verify(try idle.verifyBody(freshness: idle.now))
            #expect(refused.status == 403 && refused.errorCode == "key_expired", "\(refused)")
            let kept = try #require(try await harness.store.key(idle.keyID))
            #expect(kept.counter == 0 && kept.lastAssertionAt == nil)
            // The operator sees which it is: the idle key expired, the used one active.
            for (key, state) in [(idle.keyID, "expired"), (device.keyID, "active")] {
                let shown = try await harness.get("/v1/keys/\(key.pathComponent)", headers: ServerHarness.admin)
                #expect(shown.status == 200 && shown.string("state") == state, "\(shown)")
            }

            harness.clock.advance(by: 7 * Self.day + 1)
            let late = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(late.status == 403 && late.errorCode == "key_expired", "\(late)")
            #expect(try await harness.store.key(device.keyID)?.counter == 2)
        }
    }

    @Test(
        "receipt-refresh.active-within: only the receipts of keys used within it are traded, never an expired one",
        arguments: await StoreKind.all())
    func refreshOnlyWhatIsAlive(kind: StoreKind) async throws {
        var options = ServerHarness.Options()
        // Shorter than the 30 days Apple keeps a key's data (the mock answers 404 after them).
        options.receiptRefreshActiveWithin = 10 * Self.day
        try await ServerHarness.with(kind, options) { harness in
            let used = try await TestDevice.registered(harness)
            let quiet = try await TestDevice.registered(harness)
            let refresh = try #require(harness.server.receiptRefresh)

            harness.clock.advance(by: 11 * Self.day)
            let accepted = try await used.verify(try used.verifyBody(freshness: used.now))
            #expect(accepted.status == 200, "\(accepted)")
            let round = await refresh.round()
            #expect(round.refreshed == 1 && !round.backedOff, "\(round)")
            #expect(await harness.mock.state.requestCount(.attestationData) == 1)
            #expect(try await harness.store.key(quiet.keyID)?.receiptRefreshAt == harness.clock.now() + Self.day)

            // The quiet key's attestation receipt (90 days) has expired by the time it is used again: never traded.
            harness.clock.advance(by: 80 * Self.day)
            let back = try await quiet.verify(try quiet.verifyBody(freshness: quiet.now))
            #expect(back.status == 200, "\(back)")
            #expect(await refresh.round().refreshed == 0)
            #expect(await harness.mock.state.requestCount(.attestationData) == 1)
            #expect(try await harness.store.key(quiet.keyID)?.receiptRefreshAt == nil)
        }
    }

    @Test(
        "DELETE /v1/keys/{keyId}: 401 without the admin token, 204 with it (the key, its history and count gone), then 404",
        arguments: await StoreKind.all())
    func delete(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let other = try await TestDevice.registered(harness)
            harness.clock.advance(by: 3_600)
            #expect(await harness.server.receiptRefresh?.round().refreshed == 2)
            #expect(try await harness.store.riskHistory(of: device.keyID, limit: 10).count == 1)
            let path = "/v1/keys/\(device.keyID.pathComponent)"

            for headers in [[], [("Authorization", "Bearer wrong-token-0123456789")]] {
                let refused = try await harness.send(.DELETE, path, headers: headers)
                #expect(refused.status == 401 && refused.errorCode == "admin_unauthorized", "\(headers): \(refused)")
            }
            #expect(try await harness.store.key(device.keyID) != nil)
            // An accepted assertion: the gate now keeps the key's record in memory.
            let before = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(before.status == 200, "\(before)")

            let deleted = try await harness.send(.DELETE, path, headers: ServerHarness.admin)
            #expect(deleted.status == 204 && deleted.body.isEmpty, "\(deleted)")
            #expect(deleted.header("Content-Type") == nil)
            #expect(try await harness.store.key(device.keyID) == nil)
            #expect(try await harness.store.riskHistory(of: device.keyID, limit: 10).isEmpty)
            #expect(try await harness.store.keyCounts().total == 1)

            let again = try await harness.send(.DELETE, path, headers: ServerHarness.admin)
            #expect(again.status == 404 && again.errorCode == "key_not_found", "\(again)")
            let report = try await harness.get(path, headers: ServerHarness.admin)
            #expect(report.status == 404 && report.errorCode == "key_not_found", "\(report)")
            let malformed = try await harness.send(.DELETE, "/v1/keys/not-a-key", headers: ServerHarness.admin)
            #expect(malformed.status == 400 && malformed.errorCode == "key_id_malformed", "\(malformed)")
            // Nothing of the key is read from memory after its deletion: an assertion the key's record would have
            // refused for its App ID is refused as a key the service does not know.
            let forged = try await device.verify(try device.verifyBody(freshness: device.now, fault: .wrongAppID))
            #expect(forged.status == 403 && forged.errorCode == "key_not_found", "\(forged)")
            // The device's assertions are refused as a key the service does not know; the other key is untouched.
            let assertion = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(assertion.status == 403 && assertion.errorCode == "key_not_found", "\(assertion)")
            let untouched = try await other.verify(try other.verifyBody(freshness: other.now))
            #expect(untouched.status == 200, "\(untouched)")
            #expect(try await harness.store.riskHistory(of: other.keyID, limit: 10).count == 1)
        }
    }

    @Test(
        "a DELETE answered 404 (the deletion committed before its answer was lost, then retried) still forgets the key",
        arguments: await StoreKind.all())
    func deleteRetriedForgets(kind: StoreKind) async throws {
        try await ServerHarness.with(kind) { harness in
            let device = try await TestDevice.registered(harness)
            let before = try await device.verify(try device.verifyBody(freshness: device.now))
            #expect(before.status == 200, "\(before)")
            let record = try #require(try await harness.store.key(device.keyID))
            #expect(PublicKeyCache.shared.holds(x963: record.publicKeyX963))
            // The first DELETE's deletion committed, its answer was lost; the operator's retry finds nothing.
            try await harness.store.deleteKey(device.keyID)
            let path = "/v1/keys/\(device.keyID.pathComponent)"
            let retried = try await harness.send(.DELETE, path, headers: ServerHarness.admin)
            #expect(retried.status == 404 && retried.errorCode == "key_not_found", "\(retried)")
            // Nothing of the key is read from memory any more, its parsed public key included.
            #expect(!PublicKeyCache.shared.holds(x963: record.publicKeyX963))
            let forged = try await device.verify(try device.verifyBody(freshness: device.now, fault: .wrongAppID))
            #expect(forged.status == 403 && forged.errorCode == "key_not_found", "\(forged)")
        }
    }
}
