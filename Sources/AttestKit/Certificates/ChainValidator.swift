package import Foundation
import Synchronization
@_spi(DisableValidityCheck) package import X509
import SwiftASN1

/// Validates `leaf ← intermediate ← anchor` chains with swift-certificates, checking validity windows
/// with a clock-skew leeway, and caching verified signatures per process.
///
/// A certificate's signature and CA constraints do not depend on time, so once a link (certificate,
/// issuer) has verified it is kept (a bounded number of them) and not verified again: the constant
/// intermediate always, the leaf when the caller asks (receipt signers). Validity windows of every
/// certificate, anchor included, are checked on every call.
package struct ChainValidator: Sendable {
    /// The error codes a validator reports: attestation chains and receipt signer chains differ.
    package struct Codes: Sendable {
        /// The chain does not lead to the anchor.
        package var untrusted: AttestKitError.Code
        /// A certificate had expired at the validation time.
        package var expired: AttestKitError.Code
        /// A certificate was not yet valid at the validation time.
        package var notYetValid: AttestKitError.Code

        /// Codes for the App Attest credential certificate chain.
        package static let attestation = Codes(
            untrusted: .certificateUntrusted, expired: .certificateExpired, notYetValid: .certificateNotYetValid)
        /// Codes for the receipt signer chain.
        package static let receipt = Codes(
            untrusted: .receiptCertificateUntrusted, expired: .receiptCertificateExpired,
            notYetValid: .receiptCertificateNotYetValid)
    }

    /// The pinned root.
    package let anchor: TrustAnchor
    private let codes: Codes
    private let cachesLeaves: Bool
    private let cache: VerifiedLinkCache

    /// Creates a validator for chains ending at `anchor`.
    ///
    /// - Parameters:
    ///   - anchor: The pinned root.
    ///   - codes: The error codes to report.
    ///   - cachesLeaves: Whether a leaf's verified signature is also kept. Worth it when few leaves sign many
    ///     objects (Apple's receipt signer rotates yearly); not for App Attest credential certificates, one per key.
    package init(anchor: TrustAnchor, codes: Codes, cachesLeaves: Bool = false) {
        self.anchor = anchor
        self.codes = codes
        self.cachesLeaves = cachesLeaves
        self.cache = VerifiedLinkCache.shared
    }

    /// Validates `leaf`, issued by one of `candidates`, itself issued by the anchor.
    ///
    /// - Parameters:
    ///   - leaf: The end-entity certificate.
    ///   - candidates: Certificates that may be the intermediate (the anchor's own copy and strangers are ignored).
    ///   - time: The moment to validate at.
    ///   - leeway: Seconds of clock skew tolerated on both ends of every validity window.
    package func validate(
        leaf: Certificate,
        candidates: [Certificate],
        at time: Date,
        leeway: TimeInterval
    ) async throws(AttestKitError) {
        let issuers = candidates.filter { $0.subject == leaf.issuer && $0 != leaf && $0 != anchor.certificate }
        guard !issuers.isEmpty else {
            throw AttestKitError(codes.untrusted, "no intermediate certificate issued the leaf")
        }
        var lastError = AttestKitError(codes.untrusted, "the chain does not lead to the pinned root")
        for intermediate in issuers {
            do {
                try checkValidity(of: [leaf, intermediate, anchor.certificate], at: time, leeway: leeway)
                try await verifyLink(intermediate, issuedBy: anchor.certificate)
                if cachesLeaves {
                    try await verifyLink(leaf, issuedBy: intermediate)
                } else {
                    try await verify(leaf: leaf, anchoredAt: intermediate)
                }
                return
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    private func checkValidity(of chain: [Certificate], at time: Date, leeway: TimeInterval) throws(AttestKitError) {
        for (position, certificate) in chain.enumerated() {
            let name = ["leaf", "intermediate", "root"][min(position, 2)]
            let early = certificate.notValidBefore.timeIntervalSince(time) - leeway
            if early > 0 {
                throw AttestKitError(
                    codes.notYetValid,
                    "the \(name) certificate is not valid until \(certificate.notValidBefore); "
                        + "\(AttestKitError.formatted(seconds: early)) s early",
                    secondsOutside: early)
            }
            let late = time.timeIntervalSince(certificate.notValidAfter) - leeway
            if late > 0 {
                throw AttestKitError(
                    codes.expired,
                    "the \(name) certificate expired at \(certificate.notValidAfter); "
                        + "\(AttestKitError.formatted(seconds: late)) s late",
                    secondsOutside: late)
            }
        }
    }

    /// Verifies that `issuer` signed `certificate` (with the RFC 5280 structure checks), once per process:
    /// a signature does not depend on time, so a verified link is kept and only validity windows are
    /// checked again on later calls.
    private func verifyLink(_ certificate: Certificate, issuedBy issuer: Certificate) async throws(AttestKitError) {
        let link = VerifiedLinkCache.Link(anchor: anchor.sha256, certificate: certificate, issuer: issuer)
        if cache.contains(link) { return }
        try await verify(leaf: certificate, anchoredAt: issuer)
        cache.insert(link)
    }

    /// Signature, structure and critical-extension checks of RFC 5280 (validity windows are checked above,
    /// with leeway), requiring the chain to be exactly `[leaf, root]`.
    private func verify(leaf: Certificate, anchoredAt root: Certificate) async throws(AttestKitError) {
        var verifier = Verifier(rootCertificates: CertificateStore([root])) {
            RFC5280Policy.withValidityCheckDisabled()
            ExactChainLengthPolicy(length: 2)
        }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore())
        guard case .validCertificate = result else {
            throw AttestKitError(codes.untrusted, "the certificate chain does not verify to the pinned root")
        }
    }
}

/// Accepts only chains of exactly `length` certificates (leaf and its issuing root).
private struct ExactChainLengthPolicy: VerifierPolicy {
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []
    let length: Int

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        chain.count == length ? .meetsPolicy : .failsToMeetPolicy(reason: "unexpected chain length")
    }
}

/// Process-wide set of certificate links (certificate, issuer) already verified under an anchor. Bounded,
/// and a stranger cannot fill it: only links that verified up to a pinned anchor are inserted.
private final class VerifiedLinkCache: Sendable {
    static let shared = VerifiedLinkCache()
    private static let capacity = 32

    struct Link: Hashable {
        let anchor: [UInt8]
        let certificate: Certificate
        let issuer: Certificate
    }

    private let links = Mutex<[Link]>([])

    func contains(_ link: Link) -> Bool {
        links.withLock { $0.contains(link) }
    }

    func insert(_ link: Link) {
        links.withLock { links in
            guard !links.contains(link) else { return }
            if links.count >= Self.capacity { links.removeFirst() }
            links.append(link)
        }
    }
}
