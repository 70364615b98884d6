import Foundation
import X509

/// The software Apple's receipt CA, shaped like Apple's (SPEC.md §4): a self-signed P-384 root (for Apple Root
/// CA - G3), a P-256 intermediate signed ecdsa-with-SHA384 (for Apple Application Integration CA 5 - G1) and a
/// P-256 signer signed ecdsa-with-SHA256 (for Application Attestation Fraud Receipt Signing).
struct ReceiptHierarchy: Sendable {
    /// The receipt trust anchor.
    let root: SigningIdentity
    /// The CA that issues the signer.
    let intermediate: SigningIdentity
    /// The certificate that signs receipts.
    let signer: SigningIdentity

    /// Builds the hierarchy.
    ///
    /// - Parameters:
    ///   - seed: Derives the keys when given; random keys otherwise.
    ///   - label: Distinguishes the keys of several hierarchies derived from one seed.
    ///   - validity: The validity window of every certificate of the hierarchy.
    init(seed: [UInt8]?, label: String, validity: ClosedRange<Date>) throws(SoftwareAppleError) {
        let names = try Self.names()
        root = try SigningIdentity.root(
            key: SigningKey.make(.p384, label: "\(label)/receipt-root", seed: seed), subject: names.root,
            notBefore: validity.lowerBound, notAfter: validity.upperBound)
        let caExtensions = try SigningIdentity.signing("CA extensions") {
            try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }
        }
        intermediate = try root.issue(
            key: SigningKey.make(.p256, label: "\(label)/receipt-intermediate", seed: seed),
            subject: names.intermediate, notBefore: validity.lowerBound, notAfter: validity.upperBound,
            signatureAlgorithm: .ecdsaWithSHA384, extensions: caExtensions)
        let signerExtensions = try SigningIdentity.signing("signer extensions") {
            try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
            }
        }
        signer = try intermediate.issue(
            key: SigningKey.make(.p256, label: "\(label)/receipt-signer", seed: seed),
            subject: names.signer, notBefore: validity.lowerBound, notAfter: validity.upperBound,
            signatureAlgorithm: .ecdsaWithSHA256, extensions: signerExtensions)
    }

    /// Restores a hierarchy from a state file.
    init(root: SigningIdentity, intermediate: SigningIdentity, signer: SigningIdentity) {
        self.root = root
        self.intermediate = intermediate
        self.signer = signer
    }

    /// The distinguished names: Apple's shape, never Apple's words.
    static func names() throws(SoftwareAppleError) -> (
        root: DistinguishedName, intermediate: DistinguishedName, signer: DistinguishedName
    ) {
        try SigningIdentity.signing("names") {
            (
                try DistinguishedName {
                    CommonName("AttestKit Software Root CA - G3")
                    OrganizationalUnitName("AttestKit Software Certification Authority")
                    OrganizationName(SoftwareApple.organization)
                    CountryName("US")
                },
                try DistinguishedName {
                    CommonName("AttestKit Software Application Integration CA 5 - G1")
                    OrganizationalUnitName("AttestKit Software Certification Authority")
                    OrganizationName(SoftwareApple.organization)
                    CountryName("US")
                },
                try DistinguishedName {
                    CommonName("AttestKit Software Fraud Receipt Signing")
                    OrganizationName(SoftwareApple.organization)
                    CountryName("US")
                }
            )
        }
    }
}
