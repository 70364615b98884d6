import AttestKit
import AttestKitStore
import Crypto
import Foundation
import Testing

/// The app key a key attestation binds to an App Attest key: strictly a P-256 SubjectPublicKeyInfo, stored with
/// the key by every backend.
@Suite("App keys")
struct AppKeyTests {
    /// A fresh app key's DER, as CryptoKit writes it.
    static func der() -> [UInt8] { Array(P256.Signing.PrivateKey().publicKey.derRepresentation) }

    static func unhex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16) ?? 0
        }
    }

    @Test("a P-256 key's DER is accepted and keeps its bytes and key")
    func accepted() throws {
        let key = P256.Signing.PrivateKey().publicKey
        let appKey = try AppKey(subjectPublicKeyInfo: Array(key.derRepresentation))
        #expect(appKey.der == Array(key.derRepresentation) && appKey.der.count == 91)
        #expect(appKey.publicKey.rawRepresentation == key.rawRepresentation)
        // A key agreement key has the same SubjectPublicKeyInfo.
        let agreement = P256.KeyAgreement.PrivateKey().publicKey
        #expect(try AppKey(subjectPublicKeyInfo: Array(agreement.derRepresentation)).der.count == 91)
    }

    @Test("every truncation, trailing bytes, flipped bits and other keys are refused")
    func refused() throws {
        let der = Self.der()
        for length in 0..<der.count {
            #expect(throws: StoreError.invalidInput) { try AppKey(subjectPublicKeyInfo: der.prefix(length)) }
        }
        #expect(throws: StoreError.invalidInput) { try AppKey(subjectPublicKeyInfo: der + [0]) }
        #expect(throws: StoreError.invalidInput) { try AppKey(subjectPublicKeyInfo: der + der) }
        // The point off the curve; the curve OID changed; a BIT STRING with unused bits; not a SEQUENCE.
        var offCurve = der
        offCurve[90] ^= 0x01
        // 30 59 | 30 13 | 06 07 <id-ecPublicKey> | 06 08 <prime256v1, last byte at 22> | 03 42 <unused bits at 25> 04 …
        var otherCurve = der
        otherCurve[22] ^= 0x01
        var unusedBits = der
        unusedBits[25] = 0x01
        var notSequence = der
        notSequence[0] = 0x31
        for variant in [offCurve, otherCurve, unusedBits, notSequence] {
            #expect(variant.count == 91 && variant != der)
            #expect(throws: StoreError.invalidInput) { try AppKey(subjectPublicKeyInfo: variant) }
        }
        let others: [[UInt8]] = [
            // The compressed form of a P-256 point.
            Array(P256.Signing.PrivateKey().publicKey.compressedRepresentation),
            Array(P384.Signing.PrivateKey().publicKey.derRepresentation),
            Array(P521.Signing.PrivateKey().publicKey.derRepresentation),
            Array(Curve25519.Signing.PrivateKey().publicKey.rawRepresentation),
            // RSA-1024 and secp256k1 SubjectPublicKeyInfos (Python's cryptography).
            Self.unhex(
                "30819f300d06092a864886f70d010101050003818d0030818902818100c3ef1055944b0aeec68e0d1da003c4c6c1594e0944"
                    + "96b140b65a985118cbef1f52c9dc139594d6b5349d01ac179a609630152770b05e5feedaa990ce50fbaafcb1a4c4ef9e"
                    + "99415f26692c5aa39a601851e303fd01bed27a9a4bfc5f63c38778b7359c2411a0de7b3fc5f5604f44caa082a59eb175"
                    + "d6e6bb979c005cf3beb6610203010001"),
            Self.unhex(
                "3056301006072a8648ce3d020106052b8104000a0342000428fa6351fd9d65dd68ff27c782bc4c83e0196dba22e021a659"
                    + "a223b9709afb371bfe43c57e8220b38ee81b5bdaa72af279f0f0bdf5493cbb1e121e1deeade315"),
            Array(repeating: 0, count: 91),
        ]
        for other in others {
            #expect(throws: StoreError.invalidInput) { try AppKey(subjectPublicKeyInfo: other) }
        }
    }

    @Test("registered with the key and read back; absent for a plain registration", arguments: await StoreBackend.all())
    func stored(backend: StoreBackend) async throws {
        try await backend.withStore { store in
            let appKey = try AppKey(subjectPublicKeyInfo: Self.der())
            let key = TestKeys.key()
            let registration = try KeyRegistration(
                keyID: key.keyID, publicKeyX963: key.publicKeyX963, appID: TestKeys.appID, environment: .production,
                appKey: appKey)
            let record = try await store.registerKey(registration, now: TestKeys.t0)
            #expect(record.appKey == appKey)
            let read = try #require(try await store.key(key.keyID))
            #expect(read.appKey == appKey && read.appKey?.der == appKey.der && read == record)
            #expect(!record.description.contains(appKey.der.map { String(format: "%02x", $0) }.joined()))

            let plain = try TestKeys.registration()
            _ = try await store.registerKey(plain, now: TestKeys.t0)
            #expect(try await store.key(plain.keyID)?.appKey == nil)
        }
    }
}
