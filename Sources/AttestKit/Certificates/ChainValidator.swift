package import Foundation
import Synchronization
@_spi(DisableValidityCheck) package import X509
package import SwiftASN1

/// Validates `leaf ← intermediate ← anchor` chains with swift-certificates, checking validity windows
/// with a clock-skew leeway, and caching verified signatures per process.
///
/// Each link (certificate, issuer) is verified by a swift-certificates `Verifier` whose policies are RFC 5280
/// (validity windows excepted), the exact chain shape and, when the validator has ``Markers``, the marker
/// extension the certificate's role requires (``MarkerExtensionPolicy``).
///
/// A certificate's signature, CA constraints and extensions do not depend on time, so once a link has
/// verified it is kept (a bounded number of them), with the marker it was required to carry, and not
/// verified again: the constant intermediate always, the leaf when the caller asks (receipt signers).
/// Validity windows of every certificate, anchor included, are checked on every call.
package struct ChainValidator: Sendable {
    /// The error codes a validator reports: attestation chains and receipt signer chains differ.
    package struct Codes: Sendable {
        /// The chain does not lead to the anchor.
        package var untrusted: AttestKitError.Code
        /// A certificate had expired at the validation time.
        package var expired: AttestKitError.Code
        /// A certificate was not yet valid at the validation time.
        package var notYetValid: AttestKitError.Code
        /// A certificate chains to the anchor but lacks the marker of its role (see ``Markers``).
        package var unauthorized: AttestKitError.Code

        /// Codes for the App Attest credential certificate chain.
        package static let attestation = Codes(
            untrusted: .certificateUntrusted, expired: .certificateExpired, notYetValid: .certificateNotYetValid,
            unauthorized: .certificateUntrusted)
        /// Codes for the receipt signer chain.
        package static let receipt = Codes(
            untrusted: .receiptCertificateUntrusted, expired: .receiptCertificateExpired,
            notYetValid: .receiptCertificateNotYetValid, unauthorized: .receiptSignerNotAuthorized)
    }

    /// The extensions that mark the certificates of the roles a chain is for, when the anchor issues certificates
    /// for other roles too.
    package struct Markers: Sendable, Hashable {
        /// The extension the intermediate must carry, if any.
        package var intermediate: ASN1ObjectIdentifier?
        /// The extension the leaf must carry, if any.
        package var leaf: ASN1ObjectIdentifier?

        /// No marker required: the anchor issues only for this role (App Attest's root).
        package static let none = Markers(intermediate: nil, leaf: nil)
        /// Apple's receipt CA and receipt signer, under Apple Root CA - G3 (which also certifies developers' keys).
        package static let receipt = Markers(
            intermediate: MarkerExtensionPolicy.appleReceiptCA, leaf: MarkerExtensionPolicy.appleReceiptSigner)
    }

    /// The pinned root.
    package let anchor: TrustAnchor
    private let codes: Codes
    private let markers: Markers
    private let cachesLeaves: Bool
    private let cache: VerifiedLinkCache

    /// Creates a validator for chains ending at `anchor`.
    ///
    /// - Parameters:
    ///   - anchor: The pinned root.
    ///   - codes: The error codes to report.
    ///   - markers: The extensions the intermediate and the leaf must carry.
    ///   - cachesLeaves: Whether a leaf's verified signature is also kept. Worth it when few leaves sign many
    ///     objects (Apple's receipt signer rotates yearly); not for App Attest credential certificates, one per key.
    package init(anchor: TrustAnchor, codes: Codes, markers: Markers = .none, cachesLeaves: Bool = false) {
        self.anchor = anchor
        self.codes = codes
        self.markers = markers
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
                // The signatures first: a chain that does not lead to the anchor is untrusted whatever dates its
                // forger wrote, never expired or not yet valid.
                try await verifyLink(
                    intermediate, issuedBy: anchor.certificate, marker: markers.intermediate,
                    roles: .intermediate)
                if cachesLeaves {
                    try await verifyLink(leaf, issuedBy: intermediate, marker: markers.leaf, roles: .leaf)
                } else {
                    try await verify(leaf, issuedBy: intermediate, marker: markers.leaf, roles: .leaf)
                }
                try checkValidity(of: [leaf, intermediate, anchor.certificate], at: time, leeway: leeway)
                return
            } catch {
                lastError = error
            }
        }
        throw lastError
    }

    /// Each certificate's window holds `time`, with `leeway` (as `asLeeway` takes it). Written so that a NaN
    /// anywhere fails: an unusable verification time is refused, never waved through.
    private func checkValidity(of chain: [Certificate], at time: Date, leeway: TimeInterval) throws(AttestKitError) {
        let leeway = leeway.asLeeway
        for (position, certificate) in chain.enumerated() {
            let name = ["leaf", "intermediate", "root"][min(position, 2)]
            let early = certificate.notValidBefore.timeIntervalSince(time) - leeway
            if !(early <= 0) {
                throw AttestKitError(
                    codes.notYetValid,
                    "the \(name) certificate is not valid until \(certificate.notValidBefore); "
                        + "\(AttestKitError.formatted(seconds: early)) s early",
                    secondsOutside: early)
            }
            let late = time.timeIntervalSince(certificate.notValidAfter) - leeway
            if !(late <= 0) {
                throw AttestKitError(
                    codes.expired,
                    "the \(name) certificate expired at \(certificate.notValidAfter); "
                        + "\(AttestKitError.formatted(seconds: late)) s late",
                    secondsOutside: late)
            }
        }
    }

    /// Verifies that `issuer` signed `certificate` (with the RFC 5280 structure checks) and that `certificate`
    /// carries `marker`, once per process: neither depends on time, so a verified link is kept with its marker
    /// and only validity windows are checked again on later calls.
    private func verifyLink(
        _ certificate: Certificate, issuedBy issuer: Certificate, marker: ASN1ObjectIdentifier?, roles: LinkRoles
    ) async throws(AttestKitError) {
        let link = VerifiedLinkCache.Link(
            anchor: anchor.sha256, certificate: certificate, issuer: issuer, marker: marker)
        if cache.contains(link) { return }
        try await verify(certificate, issuedBy: issuer, marker: marker, roles: roles)
        cache.insert(link)
    }

    /// Signature, structure and critical-extension checks of RFC 5280 (validity windows are checked above,
    /// with leeway), requiring the chain to be exactly `[certificate, issuer]` and `certificate` to carry
    /// `marker`, when one is given. A refusal names swift-certificates' reasons (``LinkRoles``).
    private func verify(
        _ certificate: Certificate, issuedBy issuer: Certificate, marker: ASN1ObjectIdentifier?, roles: LinkRoles
    ) async throws(AttestKitError) {
        var verifier = Verifier(rootCertificates: CertificateStore([issuer])) {
            RFC5280Policy.withValidityCheckDisabled()
            ExactChainLengthPolicy(length: 2)
            if let marker {
                MarkerExtensionPolicy(marker: marker)
            }
        }
        switch await verifier.validate(leaf: certificate, intermediates: CertificateStore()) {
        case .validCertificate:
            return
        case .couldNotValidate(let failures):
            // Policies run only on chains whose signatures verified: a marker failure means the anchor did
            // certify the key, for another role.
            if failures.contains(where: { $0.policyFailureReason == MarkerExtensionPolicy.failureReason }) {
                throw AttestKitError(
                    codes.unauthorized, "a certificate of the chain lacks the extension that marks its role")
            }
            throw AttestKitError(
                codes.untrusted,
                "the certificate chain does not verify to the pinned root: "
                    + roles.explain(
                        failures, certificate: certificate, issuer: issuer,
                        handledCriticalExtensions: verifier.policy.verifyingCriticalExtensions))
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
        /// The marker `certificate` was required to carry: a link verified without one does not vouch for it.
        let marker: ASN1ObjectIdentifier?
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
