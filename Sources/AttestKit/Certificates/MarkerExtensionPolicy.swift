package import SwiftASN1
package import X509

/// Requires the first certificate of a chain to carry an extension with a given object identifier: the marker by
/// which Apple tells the certificates of one role (its receipt CA, its receipt signer) from every other certificate
/// it issues under the same root.
///
/// Apple Root CA - G3 certifies many Apple CAs, and some of them certify keys that developers hold (Apple Pay
/// processing keys, for instance). A chain to that root therefore proves only that Apple certified the key, not
/// that the key belongs to Apple's receipt service. The markers do: Apple Application Integration CA 5 - G1
/// carries 1.2.840.113635.100.6.2.3 and Application Attestation Fraud Receipt Signing carries
/// 1.2.840.113635.100.12.15.
///
/// ``ChainValidator`` verifies a chain link by link (a certificate and its issuer), so the policy checks the
/// certificate of the link, at the moment the link is verified; a verified link is cached together with the marker
/// it was required to carry.
package struct MarkerExtensionPolicy: VerifierPolicy, Sendable, Hashable {
    /// The marker of Apple Application Integration CA 5 - G1, the CA that issues Apple's receipt signers.
    package static let appleReceiptCA: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 3]
    /// The marker of Application Attestation Fraud Receipt Signing, the certificate that signs receipts.
    package static let appleReceiptSigner: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 12, 15]

    /// Why a chain fails this policy; compared by ``ChainValidator`` to tell this failure from the others.
    package static let failureReason = X509.PolicyFailureReason("the certificate lacks the marker of its role")

    /// The policy only looks for the marker: a critical marker is left to RFC 5280 (unknown, so refused).
    package let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []
    /// The extension the chain's first certificate must carry.
    package let marker: ASN1ObjectIdentifier

    /// Creates a policy requiring `marker`.
    package init(marker: ASN1ObjectIdentifier) {
        self.marker = marker
    }

    /// Meets the policy when the chain's first certificate has an extension with the marker's identifier.
    package func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        chain.leaf.extensions.contains { $0.oid == marker }
            ? .meetsPolicy : .failsToMeetPolicy(reason: Self.failureReason)
    }
}
