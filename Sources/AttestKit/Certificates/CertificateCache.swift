import Synchronization
package import X509
import SwiftASN1

/// A small process-wide cache of parsed certificates, keyed by their exact DER bytes.
///
/// Every App Attest receipt embeds the same three certificates (receipt signer, Apple Application Integration
/// CA 5 - G1, Apple Root CA - G3) until the signer rotates about once a year, and parsing them costs more than
/// a P-256 signature check. Looking them up by their bytes instead returns the very value a parse would, so
/// the cache changes no verification result: trust is still decided by ``ChainValidator`` on every call.
///
/// The cache holds at most ``capacity`` certificates and evicts the oldest first. A stranger sending other
/// certificates can only evict entries, which costs later calls one parse each.
package final class CertificateCache: Sendable {
    /// The cache shared by every verifier in the process.
    package static let shared = CertificateCache(capacity: 16)

    /// The most certificates kept.
    package let capacity: Int
    private let entries = Mutex<[Entry]>([])

    private struct Entry: Sendable {
        let der: [UInt8]
        let certificate: Certificate
    }

    /// Creates an empty cache.
    package init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// The certificate `der` encodes, parsed as strict DER, from the cache when these exact bytes were seen.
    ///
    /// - Throws: What `Certificate(derEncoded:)` throws for bytes that are not a DER certificate.
    package func certificate(derEncoded der: ArraySlice<UInt8>) throws -> Certificate {
        if let cached = entries.withLock({ entries in
            entries.first { $0.der.count == der.count && $0.der.elementsEqual(der) }
        }) {
            return cached.certificate
        }
        // Parse from a copy, so that the cached value does not keep the caller's whole buffer alive.
        let copy = Array(der)
        let certificate = try Certificate(derEncoded: copy)
        entries.withLock { entries in
            guard !entries.contains(where: { $0.der == copy }) else { return }
            if entries.count >= capacity { entries.removeFirst() }
            entries.append(Entry(der: copy, certificate: certificate))
        }
        return certificate
    }

    /// How many certificates are cached.
    package var count: Int { entries.withLock { $0.count } }
}
