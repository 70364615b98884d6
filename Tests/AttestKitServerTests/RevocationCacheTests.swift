import AttestKit
import AttestKitServer
import AttestKitStore
import AttestKitTesting
import Testing

/// The cache of parsed public keys (``PublicKeyCache``) does not hide a revocation: the key's state is read from the
/// store on every request, so the first request after the revocation is refused, whatever the store.
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
                "/v1/keys/\(device.keyID.base64URL)/revoke", .raw(""), headers: ServerHarness.admin)
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
}
