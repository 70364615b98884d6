import Crypto
import Testing

@testable import AttestKit

@Suite struct PublicKeyCacheTests {
    static func x963() -> [UInt8] {
        Array(P256.Signing.PrivateKey().publicKey.x963Representation)
    }

    @Test func aCachedKeyIsTheParsedOne() throws {
        let cache = PublicKeyCache(capacity: 4)
        let bytes = Self.x963()
        let first = try cache.key(x963: bytes)
        #expect(Array(first.x963Representation) == bytes)
        #expect(Array(try cache.key(x963: bytes).x963Representation) == bytes)
        #expect(cache.count == 1)
    }

    @Test func bytesThatAreNotAPointThrowAndAreNotCached() {
        let cache = PublicKeyCache(capacity: 4)
        var bytes = Self.x963()
        bytes[64] ^= 0x01  // off the curve
        #expect(throws: (any Error).self) { try cache.key(x963: bytes) }
        #expect(throws: (any Error).self) { try cache.key(x963: Array(bytes.prefix(33))) }
        #expect(cache.count == 0)
    }

    @Test func theCacheIsBoundedAndEvictsTheOldestFirst() throws {
        let cache = PublicKeyCache(capacity: 3)
        let keys = (0..<7).map { _ in Self.x963() }
        for bytes in keys {
            _ = try cache.key(x963: bytes)
            #expect(cache.count <= 3)
        }
        #expect(cache.count == 3)
        // Every key still parses to itself, cached or evicted.
        for bytes in keys {
            #expect(Array(try cache.key(x963: bytes).x963Representation) == bytes)
        }
    }

    @Test func aForgottenKeyIsNoLongerHeld() throws {
        let cache = PublicKeyCache(capacity: 4)
        let (kept, forgotten) = (Self.x963(), Self.x963())
        _ = try cache.key(x963: kept)
        _ = try cache.key(x963: forgotten)
        cache.forget(x963: forgotten)
        #expect(cache.holds(x963: kept) && !cache.holds(x963: forgotten) && cache.count == 1)
    }

    @Test func aValueReadBeforeARemovalIsNotCachedAfterIt() {
        let cache = BoundedCache<Int, String>(capacity: 4)
        cache.insert("kept", for: 1)
        // A read of key 2 starts (its mark taken), key 2 is removed meanwhile, then the read ends.
        let mark = cache.removals
        cache.remove(2)
        cache.insert("stale", for: 2, unlessRemovedSince: mark)
        #expect(cache[2] == nil)
        // A read that saw no removal caches what it read.
        let later = cache.removals
        cache.insert("fresh", for: 3, unlessRemovedSince: later)
        #expect(cache[3] == "fresh" && cache[1] == "kept")
    }

    @Test func theVerifierRefusesAMalformedStoredKey() {
        var bytes = Self.x963()
        bytes[0] = 0x05
        let error = #expect(throws: AttestKitError.self) {
            try AssertionVerifier().verify(
                [UInt8](), publicKeyX963: bytes, appID: try AppID("ABCDE12345.com.example.app"),
                clientData: .clientData([1]), previousCounter: 0)
        }
        #expect(error?.code == .publicKeyMalformed)
    }
}
