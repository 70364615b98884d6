package import Foundation
import Synchronization
@_spi(DisableValidityCheck) package import X509
import SwiftASN1

/// Validates `leaf ← intermediate ← anchor` chains with swift-certificates, checking validity windows
/// with a clock-skew leeway, and caching the (constant) intermediate's verification per process.
///
/// The intermediate's signature and CA constraints do not depend on time, so once an intermediate has
/// been verified against the anchor it is kept (by DER bytes, a bounded number of them) and used as
/// the trust root for later chains. Validity windows of every certificate, anchor included, are
/// checked on every call.
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
    private let cache: IntermediateCache

    /// Creates a validator for chains ending at `anchor`.
    package init(anchor: TrustAnchor, codes: Codes) {
        self.anchor = anchor
        self.codes = codes
        self.cache = IntermediateCache.shared
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
                let trusted = try await verifiedIntermediate(intermediate)
                try await verify(leaf: leaf, anchoredAt: trusted)
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

    private func verifiedIntermediate(_ intermediate: Certificate) async throws(AttestKitError) -> Certificate {
        if cache.contains(intermediate, anchor: anchor) { return intermediate }
        try await verify(leaf: intermediate, anchoredAt: anchor.certificate)
        cache.insert(intermediate, anchor: anchor)
        return intermediate
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

/// Process-wide set of intermediates already verified against an anchor. Bounded: a stranger cannot
/// grow it, because only intermediates that verified against a pinned anchor are inserted.
private final class IntermediateCache: Sendable {
    static let shared = IntermediateCache()
    private static let capacity = 32

    private struct Entry: Hashable {
        let anchor: [UInt8]
        let intermediate: Certificate
    }

    private let entries = Mutex<[Entry]>([])

    func contains(_ intermediate: Certificate, anchor: TrustAnchor) -> Bool {
        let entry = Entry(anchor: anchor.sha256, intermediate: intermediate)
        return entries.withLock { $0.contains(entry) }
    }

    func insert(_ intermediate: Certificate, anchor: TrustAnchor) {
        let entry = Entry(anchor: anchor.sha256, intermediate: intermediate)
        entries.withLock { entries in
            guard !entries.contains(entry) else { return }
            if entries.count >= Self.capacity { entries.removeFirst() }
            entries.append(entry)
        }
    }
}
