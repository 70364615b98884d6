import SwiftASN1
import Testing
import X509

@testable import AttestKit

@Suite struct CertificateCacheTests {
    static let ders: [[UInt8]] = {
        let synthetic = SyntheticReceipts.shared
        return [synthetic.anchor.certificate, synthetic.intermediate, synthetic.signer].map { certificate in
            var coder = DER.Serializer()
            do { try coder.serialize(certificate) } catch { preconditionFailure("\(error)") }
            return coder.serializedBytes
        }
    }()

    @Test func aCachedCertificateIsTheParsedOne() throws {
        let cache = CertificateCache(capacity: 4)
        for der in Self.ders {
            let first = try cache.certificate(derEncoded: der[...])
            #expect(first == (try Certificate(derEncoded: der)))
            // The same bytes at other indices of another buffer hit the cache.
            let shifted = ([0x00] + der).dropFirst()
            #expect(try cache.certificate(derEncoded: shifted) == first)
        }
        #expect(cache.count == Self.ders.count)
    }

    @Test func theCacheIsBounded() throws {
        let cache = CertificateCache(capacity: 2)
        for der in Self.ders { _ = try cache.certificate(derEncoded: der[...]) }
        #expect(cache.count == 2)
        // The oldest was evicted, and still parses.
        #expect(try cache.certificate(derEncoded: Self.ders[0][...]) == (try Certificate(derEncoded: Self.ders[0])))
    }

    @Test func malformedBytesThrowAndAreNotCached() throws {
        let cache = CertificateCache(capacity: 4)
        let truncated = Self.ders[0].dropLast()
        #expect(throws: (any Error).self) { try cache.certificate(derEncoded: truncated) }
        #expect(throws: (any Error).self) { try cache.certificate(derEncoded: [0x30, 0x00]) }
        #expect(cache.count == 0)
    }
}
